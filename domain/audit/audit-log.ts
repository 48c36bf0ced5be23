import type { AuditEntry } from './audit-event';
import { isAuthentic, type Checkpoint, type CheckpointKey } from './checkpoint';
import { ChainVerifier, type VerifyResult } from './hash-chain';

export interface AuditFilter {
  action?: string | undefined;
  actorId?: string | undefined;
  resourceId?: string | undefined;
  since?: Date | undefined;
  until?: Date | undefined;
}

export interface AuditPage {
  items: AuditEntry[];
  /** The seq to continue below, newest first. */
  nextBeforeSeq: number | null;
}

/** The sealed, per-org chain of audit entries. */
export interface AuditLog {
  /** Chains the org's pending events; returns how many were sealed. */
  seal(orgId: string): Promise<number>;
  list(orgId: string, filter: AuditFilter, limit: number, beforeSeq: number | null): Promise<AuditPage>;
  /** The whole chain in seq order, in batches, for verification. */
  inOrder(orgId: string): AsyncIterable<AuditEntry[]>;
  /** Signed heads recorded by the sealer. */
  checkpoints(orgId: string): Promise<Checkpoint[]>;
}

/** Reads see their own writes: pending events are sealed before a read. */
export async function listAudit(
  log: AuditLog,
  orgId: string,
  filter: AuditFilter,
  limit: number,
  beforeSeq: number | null,
) {
  await log.seal(orgId);
  return log.list(orgId, filter, limit, beforeSeq);
}

/**
 * Recomputes the chain and checks it passes through every checkpoint signed with a key we hold
 * (the current master key or a previous one; checkpoints of a key no longer configured are
 * skipped: they cannot be checked without it).
 */
export async function verifyAudit(
  log: AuditLog,
  orgId: string,
  keys: CheckpointKey[],
): Promise<VerifyResult> {
  await log.seal(orgId);
  const keyById = new Map(keys.map((k) => [k.id, k]));
  const checkable = (await log.checkpoints(orgId)).filter((c) => keyById.has(c.keyId));
  const authentic = (c: Checkpoint) => isAuthentic(keyById.get(c.keyId) as CheckpointKey, c);
  const verifier = new ChainVerifier(new Map(checkable.filter(authentic).map((c) => [c.seq, c.hash])));
  checkable.filter((c) => !authentic(c)).forEach((c) => verifier.markBroken(c.seq));
  for await (const batch of log.inOrder(orgId)) batch.forEach((entry) => verifier.push(entry));
  return verifier.result();
}
