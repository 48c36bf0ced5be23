import { SYSTEM_ACTOR } from '../audit/audit-event';
import { newAuditEvent } from '../audit/new-event';
import type { Clock } from '../clock';
import type { SecretSealer, UnitOfWork } from '../ports';
import { sealingContext } from './credential-use-cases';

const BATCH = 100;

/**
 * Moves every live credential onto the current master key, after an operator rotated it
 * (new CP_MASTER_KEY, the old one in CP_MASTER_KEY_PREVIOUS). Each batch is one transaction with
 * its rows locked (SKIP LOCKED), so it is safe to run while the service runs, twice, or in two
 * places at once. Returns how many credentials were resealed.
 */
export async function resealCredentials(
  deps: { uow: UnitOfWork; clock: Clock; sealer: SecretSealer },
  onProgress: (done: number) => void = () => {},
): Promise<number> {
  let done = 0;
  for (;;) {
    const moved = await deps.uow.transaction(async (tx) => {
      const rows = await tx.credentials.sealedUnderOtherKeys(deps.sealer.currentKeyId, BATCH);
      const now = deps.clock.now();
      for (const c of rows) {
        const context = sealingContext(c.orgId, c.ref);
        const secret = deps.sealer.open({ keyId: c.keyId, sealed: c.sealedSecret ?? '' }, context);
        const fromKey = c.keyId;
        const sealed = deps.sealer.seal(secret, context);
        c.sealedSecret = sealed.sealed;
        c.keyId = sealed.keyId;
        tx.credentials.update(c);
        tx.audit.record(
          newAuditEvent({
            orgId: c.orgId,
            actor: SYSTEM_ACTOR,
            action: 'credential.resealed',
            resource: { type: 'credential', id: c.ref },
            at: now,
            requestId: null,
            details: { from_key_id: fromKey, to_key_id: sealed.keyId },
          }),
        );
      }
      return rows.length;
    });
    done += moved;
    if (moved > 0) onProgress(done);
    if (moved < BATCH) return done;
  }
}
