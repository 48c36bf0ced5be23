import type { AuditEntry } from './audit-event';
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

export async function verifyAudit(log: AuditLog, orgId: string): Promise<VerifyResult> {
  await log.seal(orgId);
  const verifier = new ChainVerifier();
  for await (const batch of log.inOrder(orgId)) batch.forEach((entry) => verifier.push(entry));
  return verifier.result();
}
