import type { AuditEntry } from './audit-event';
import type { Checkpoint } from './checkpoint';

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

/** One consistent view of an org's chain: checkpoints and entries from the same moment. */
export interface ChainSnapshot {
  /** Signed heads recorded in the database by the sealer, in seq order. */
  checkpoints: Checkpoint[];
  /** The whole chain in seq order, in batches. */
  entries(): AsyncIterable<AuditEntry[]>;
}

/** The sealed, per-org chain of audit entries. */
export interface AuditLog {
  /** Chains the org's pending events; returns how many were sealed. */
  seal(orgId: string): Promise<number>;
  list(orgId: string, filter: AuditFilter, limit: number, beforeSeq: number | null): Promise<AuditPage>;
  /** Reads from one snapshot, so a seal running meanwhile cannot show entries without their checkpoint. */
  readChain<T>(orgId: string, read: (chain: ChainSnapshot) => Promise<T>): Promise<T>;
  /**
   * The newest head the sealer signed, as kept OUTSIDE the database (which only moves forward,
   * and only along the chain): null before the first seal, or when that store lost it.
   */
  signedHead(orgId: string): Promise<Checkpoint | null>;
  /**
   * The first seq the sealer chained after a chain that no longer passed through that head (kept
   * outside the database too, for good); null when it never did.
   */
  divergedSince(orgId: string): Promise<number | null>;
}

/**
 * Reads see their own writes: pending events are sealed before a read. A chain that cannot be
 * sealed (changed behind the service, say) is read as it stands: its events wait in the outbox,
 * the background sealer logs why, and verify reports where the chain broke.
 */
export async function sealForRead(log: AuditLog, orgId: string): Promise<void> {
  await log.seal(orgId).catch(() => 0);
}

export async function listAudit(
  log: AuditLog,
  orgId: string,
  filter: AuditFilter,
  limit: number,
  beforeSeq: number | null,
) {
  await sealForRead(log, orgId);
  return log.list(orgId, filter, limit, beforeSeq);
}
