import { isAuthentic, signCheckpoint, type Checkpoint, type CheckpointKey } from './checkpoint';
import type { CheckpointStore, Resigned } from './checkpoint-store';

const BATCH = 500;

export interface ResignDeps {
  store: CheckpointStore;
  /** Signs anew: the current master key's checkpoint key. */
  current: CheckpointKey;
  /** Every key held, the previous master keys' included. */
  keys: CheckpointKey[];
  batchSize?: number;
}

/** A signed head that was left as it is, because nothing vouches for it any more. */
export interface RefusedCheckpoint {
  orgId: string;
  seq: number;
  keyId: string;
  /** A row of the database, or the copy of the newest head kept outside it. */
  place: 'checkpoint' | 'signed_head';
  reason: 'unknown_key_id' | 'bad_signature';
}

export interface ResignReport {
  resigned: number;
  headsResigned: number;
  refused: RefusedCheckpoint[];
}

export type ResignProgress = (what: 'checkpoints' | 'signed heads', done: number) => void;

/**
 * After a master key rotation, signs every checkpoint still signed under a previous key again,
 * under the current one, so the old key can be dropped without verify failing on them.
 *
 * The row keeps its (org, seq, hash) and gets the new key id and signature in place: verify keeps
 * its one rule (each checkpoint carries a valid signature under a key it holds; an unknown key id
 * fails), and nothing else needs to be trusted. Re-signing vouches only for a signature it has
 * checked with the key it names, so it cannot launder a relabelled or forged checkpoint: such a
 * one is refused, left as it is, and verify keeps failing on it. (It carries the old key's trust,
 * no more: heads exported off the box are what proves a chain signed under a key that leaked.)
 * Each swap is conditional on the row still holding the old signature, and the sealer only adds
 * rows under the current key, so it is safe while the service runs and safe to run twice.
 */
export async function resignCheckpoints(
  deps: ResignDeps,
  onProgress: ResignProgress = () => {},
): Promise<ResignReport> {
  const report: ResignReport = { resigned: 0, headsResigned: 0, refused: [] };
  await resignStored(deps, report, onProgress);
  await resignSignedHeads(deps, report, onProgress);
  return report;
}

/** The same (org, seq, hash) under the current key, or why the old signature cannot be trusted. */
function resign(
  deps: ResignDeps,
  c: Checkpoint,
  place: RefusedCheckpoint['place'],
): Resigned | RefusedCheckpoint {
  const key = deps.keys.find((k) => k.id === c.keyId);
  const refused = { orgId: c.orgId, seq: c.seq, keyId: c.keyId, place };
  if (!key) return { ...refused, reason: 'unknown_key_id' };
  if (!isAuthentic(key, c)) return { ...refused, reason: 'bad_signature' };
  return { from: c, to: signCheckpoint(deps.current, c.orgId, c, c.signedAt) };
}

async function resignStored(deps: ResignDeps, report: ResignReport, onProgress: ResignProgress) {
  const size = deps.batchSize ?? BATCH;
  let after: { orgId: string; seq: number } | null = null;
  for (;;) {
    const batch = await deps.store.signedUnderOtherKeys(deps.current.id, after, size);
    const changes: Resigned[] = [];
    for (const c of batch) {
      const outcome = resign(deps, c, 'checkpoint');
      if ('to' in outcome) changes.push(outcome);
      else report.refused.push(outcome);
    }
    if (changes.length > 0) report.resigned += await deps.store.replaceSignatures(changes);
    if (batch.length > 0) onProgress('checkpoints', report.resigned);
    const last = batch.at(-1);
    if (batch.length < size || !last) return;
    after = { orgId: last.orgId, seq: last.seq }; // refused rows stay behind, so page on past them
  }
}

async function resignSignedHeads(deps: ResignDeps, report: ResignReport, onProgress: ResignProgress) {
  const size = deps.batchSize ?? BATCH;
  let after = '';
  for (;;) {
    const orgs = await deps.store.orgsAfter(after, size);
    for (const orgId of orgs) {
      const head = await deps.store.signedHead(orgId);
      if (!head || head.keyId === deps.current.id) continue;
      // Checked for the org it is kept under, as verify does: a head copied from another org fails.
      const outcome = resign(deps, { ...head, orgId }, 'signed_head');
      if (!('to' in outcome)) report.refused.push(outcome);
      else if (await deps.store.replaceSignedHead(outcome)) report.headsResigned += 1;
    }
    if (orgs.length > 0) onProgress('signed heads', report.headsResigned);
    const last = orgs.at(-1);
    if (orgs.length < size || !last) return;
    after = last;
  }
}
