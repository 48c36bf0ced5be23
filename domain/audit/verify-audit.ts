import { sealForRead, type AuditLog } from './audit-log';
import { isAuthentic, type Checkpoint, type CheckpointKey } from './checkpoint';
import { ChainVerifier, type BreakReason, type VerifyResult } from './hash-chain';

/**
 * What the audit log proves.
 *
 * Someone with full access to the database (a superuser, who can switch the append-only
 * triggers off) but without the master key and without the Redis the service uses CANNOT hide,
 * because verify then answers `valid: false` with the first seq it cannot vouch for:
 * - a changed, removed, inserted or reordered entry (each hash covers the entry and the hash
 *   before it);
 * - a rewrite of the whole chain with every hash recomputed: the sealer signs each head it writes
 *   (HMAC under a key derived from CP_MASTER_KEY), and they cannot sign the new one;
 * - checkpoints relabelled with a key id the service does not hold: that is a failure, not a skip;
 * - the newest entries cut off, checkpoints and head row included: the sealer also keeps the
 *   newest signed head in Redis, which only moves forward and only along the chain, so it stays
 *   ahead of (or off) the cut chain even after new entries grow it again;
 * - entries sealed after the chain was changed, then removed with the change undone: a sealer
 *   that finds the chain off the signed head records in Redis, for good, the first seq it seals
 *   after it (QA: the head was held still by one changed hash while entries were sealed, and
 *   then both were put back and the entries cut; and a cut grown again moved the reported seq
 *   past the entries removed).
 * They CAN: add entries (an event written to the outbox is sealed and signed like any other: the
 * log proves what was recorded, not that it happened), stop new entries from being recorded,
 * change or drop an event before the sealer chains it, and read every entry. Whoever also controls that Redis (or every store on the box, as with the
 * quick start's embedded stores) can rewind the head kept there and cut the tail back to any
 * checkpoint unseen; so can anyone when Redis lost its data before verify ran.
 *
 * Exporting the signed head off the box (`GET /v1/audit/head`, on a schedule, to storage the
 * box cannot write) closes that: the exported hash commits to every entry up to its seq, so
 * later the chain must reach that seq and carry that hash there, or entries were removed or
 * changed, even by someone who holds the master key. The signature shows the service made it.
 */
export async function verifyAudit(
  log: AuditLog,
  orgId: string,
  keys: CheckpointKey[],
): Promise<VerifyResult> {
  await sealForRead(log, orgId);
  // Read before the snapshot: what Redis holds was committed before it was written there.
  const outside = await log.signedHead(orgId);
  const diverged = await log.divergedSince(orgId);
  const keyById = new Map(keys.map((k) => [k.id, k]));
  return log.readChain(orgId, async (chain) => {
    const signed = outside ? [...chain.checkpoints, outside] : chain.checkpoints;
    const { anchors, broken } = trustedAnchors(orgId, signed, keyById);
    const verifier = new ChainVerifier(anchors, { signedHead: true });
    broken.forEach((b) => verifier.markBroken(b.seq, b.reason));
    // Entries sealed after a chain changed behind the service: whatever the database holds now.
    if (diverged !== null) verifier.markBroken(diverged, 'diverged');
    for await (const batch of chain.entries()) batch.forEach((entry) => verifier.push(entry));
    return verifier.result();
  });
}

/** Signed heads the chain must pass through; any that cannot be trusted is a break at its seq. */
function trustedAnchors(orgId: string, signed: Checkpoint[], keyById: ReadonlyMap<string, CheckpointKey>) {
  const anchors = new Map<number, string>();
  const broken: { seq: number; reason: BreakReason }[] = [];
  for (const c of signed) {
    const key = keyById.get(c.keyId);
    const known = anchors.get(c.seq);
    if (!key) broken.push({ seq: c.seq, reason: 'unknown_key_id' });
    else if (!isAuthentic(key, { ...c, orgId })) broken.push({ seq: c.seq, reason: 'bad_signature' });
    else if (known !== undefined && known !== c.hash)
      broken.push({ seq: c.seq, reason: 'checkpoint_mismatch' });
    else anchors.set(c.seq, c.hash);
  }
  return { anchors, broken };
}

/** The newest signed head, for operators to export off the box; null when nothing is sealed yet. */
export async function signedAuditHead(log: AuditLog, orgId: string): Promise<Checkpoint | null> {
  await sealForRead(log, orgId);
  return (await log.signedHead(orgId)) ?? log.readChain(orgId, async (c) => c.checkpoints.at(-1) ?? null);
}
