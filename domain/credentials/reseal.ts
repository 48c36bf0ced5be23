import { SYSTEM_ACTOR } from '../audit/audit-event';
import { newAuditEvent } from '../audit/new-event';
import type { Clock } from '../clock';
import { drainInBatches } from '../drain-in-batches';
import type { Credential } from '../model';
import type { SecretSealer, Tx, UnitOfWork } from '../ports';
import { AAD_VERSION, legacySealingContext, sealingContext } from './credential-use-cases';

const BATCH = 100;

export interface ResealDeps {
  uow: UnitOfWork;
  clock: Clock;
  sealer: SecretSealer;
}

/** Opens a row with the associated data it was sealed with; only resealing opens a v1 row. */
const openStored = (sealer: SecretSealer, c: Credential): string =>
  sealer.open(
    { keyId: c.keyId, sealed: c.sealedSecret ?? '' },
    c.aadVersion < AAD_VERSION ? legacySealingContext(c.orgId, c.ref) : sealingContext(c.orgId, c),
  );

/** Seals the row's secret again under the current master key and associated data, audited. */
function resealRow(tx: Tx, sealer: SecretSealer, c: Credential, at: Date): void {
  const secret = openStored(sealer, c);
  const sealed = sealer.seal(secret, sealingContext(c.orgId, c));
  const details = {
    from_key_id: c.keyId,
    to_key_id: sealed.keyId,
    from_aad_version: c.aadVersion,
    to_aad_version: AAD_VERSION,
  };
  c.sealedSecret = sealed.sealed;
  c.keyId = sealed.keyId;
  c.aadVersion = AAD_VERSION;
  tx.credentials.update(c);
  tx.audit.record(
    newAuditEvent({
      orgId: c.orgId,
      actor: SYSTEM_ACTOR,
      action: 'credential.resealed',
      resource: { type: 'credential', id: c.ref },
      at,
      requestId: null,
      details,
    }),
  );
}

/**
 * Moves every live credential onto the current master key, after an operator rotated it
 * (new CP_MASTER_KEY, the old one in CP_MASTER_KEY_PREVIOUS). Each batch is one transaction with
 * its rows locked (SKIP LOCKED), so it is safe to run while the service runs, twice, or in two
 * places at once. Returns how many credentials were resealed.
 */
export async function resealCredentials(
  deps: ResealDeps,
  onProgress: (done: number) => void = () => {},
): Promise<number> {
  const batch = () =>
    deps.uow.transaction(async (tx) => {
      const rows = await tx.credentials.sealedUnderOtherKeys(deps.sealer.currentKeyId, BATCH);
      const now = deps.clock.now();
      for (const c of rows) resealRow(tx, deps.sealer, c, now);
      return rows.length;
    });
  return drainInBatches(BATCH, batch, onProgress);
}

export interface LegacyReseal {
  resealed: number;
  /** Refs that did not open as v1 rows (their master key is not configured, or they were tampered with). */
  unreadable: string[];
}

/**
 * Reseals the rows sealed before provider, base_url and version were bound (`aadVersion` 1), at
 * start-up and by `npm run master-key:reseal`; the invoke path refuses them until then. A row
 * that does not open is left as it is and named, so one bad row cannot stop the service starting.
 * A v2 row whose marker was flipped back to 1 does not open with the v1 associated data either.
 */
export async function resealLegacyCredentials(deps: ResealDeps): Promise<LegacyReseal> {
  const result: LegacyReseal = { resealed: 0, unreadable: [] };
  // Every process runs this at start. A transaction would switch on MikroORM's AsyncLocalStorage
  // for the rest of the process's life, and on Node 20 that makes every promise pay async hooks:
  // 4-5% of a busy worker's CPU, for a process that has no other use for MikroORM. So the usual
  // case, nothing to reseal, is found out by a plain read.
  if (!(await deps.uow.read((tx) => tx.credentials.anySealedWithOlderAad(AAD_VERSION)))) return result;
  let after = '';
  for (;;) {
    const rows = await deps.uow.transaction(async (tx) => {
      const batch = await tx.credentials.sealedWithOlderAad(AAD_VERSION, after, BATCH);
      const now = deps.clock.now();
      for (const c of batch) {
        try {
          resealRow(tx, deps.sealer, c, now);
          result.resealed += 1;
        } catch {
          result.unreadable.push(c.ref);
        }
      }
      return batch;
    });
    if (rows.length < BATCH) return result;
    after = rows[rows.length - 1]?.ref ?? after;
  }
}
