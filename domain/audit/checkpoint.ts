import { createHash, createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

/**
 * A signed record of an org's chain head. Anyone with database access can recompute a whole
 * chain after rewriting it; they cannot sign its new head without the master key, so verify
 * finds the rewrite at the first checkpoint whose hash no longer matches.
 */
export interface Checkpoint {
  orgId: string;
  seq: number;
  hash: string;
  keyId: string;
  signature: string;
  /** Not covered by the signature: when the sealer signed it, for people reading it. */
  signedAt: Date;
}

export interface CheckpointKey {
  id: string;
  secret: Buffer;
}

export function checkpointKeyFrom(masterKey: Buffer): CheckpointKey {
  const secret = Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), 'audit-checkpoint-v1', 32));
  return { id: createHash('sha256').update(secret).digest('hex').slice(0, 16), secret };
}

const mac = (key: CheckpointKey, orgId: string, seq: number, hash: string): string =>
  createHmac('sha256', key.secret).update(`${orgId}\n${seq}\n${hash}`).digest('hex');

export const signCheckpoint = (
  key: CheckpointKey,
  orgId: string,
  head: { seq: number; hash: string },
  signedAt: Date,
): Checkpoint => ({
  orgId,
  seq: head.seq,
  hash: head.hash,
  keyId: key.id,
  signature: mac(key, orgId, head.seq, head.hash),
  signedAt,
});

export function isAuthentic(key: CheckpointKey, c: Checkpoint): boolean {
  const expected = Buffer.from(mac(key, c.orgId, c.seq, c.hash), 'hex');
  const actual = Buffer.from(c.signature, 'hex');
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}
