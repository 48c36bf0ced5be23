import type { AuditEvent } from '../audit/audit-event';
import type { InvocationError } from '../invocations/invocation';
import type { Approval, ApprovalStatus, ApprovalVote } from './approval';
import type { LineageSource } from './voter-lineage';
import type { InvocationTotals } from '../invocations/outcomes';

export interface ApprovalFilter {
  status?: ApprovalStatus | undefined;
  agentId?: string | undefined;
  sessionId?: string | undefined;
  policyId?: string | undefined;
}

/** A page of approvals: newest first unless `order` is 'oldest' (the approver's queue). */
export interface ApprovalPage {
  limit: number;
  after: QueuePosition | null;
  order?: 'newest' | 'oldest';
}

/** A page position in a list of approvals, by creation. */
export interface QueuePosition {
  at: Date;
  id: string;
}

/** An approval locked with its invocation's status, for one resolution to be decided on. */
export interface LockedApproval {
  approval: Approval;
  invocationStatus: string;
  /** The invocation's totals, for the audit entry that ends it (nothing was charged while it waited). */
  invocationTotals: InvocationTotals;
}

/**
 * What one resolution step writes, in one transaction: a vote, the approval's new status, the
 * invocation's move (resumed to `running`, or ended) and the audit entries of all of it.
 */
export interface ApprovalChange {
  vote?: ApprovalVote;
  status?: ApprovalStatus;
  invocation?: { status: 'running' | 'denied' | 'cancelled' | 'failed'; error: InvocationError | null };
  at: Date;
  events: AuditEvent[];
}

/** What a resolution writes, if anything, and how it went. */
export interface Decision<T> {
  change: ApprovalChange | null;
  result: T;
}

export interface ApprovalStore {
  list(
    orgId: string,
    filter: ApprovalFilter,
    page: ApprovalPage,
    /** A pending approval past its time as of `now` is filtered as expired. */
    now: Date,
  ): Promise<{ items: Approval[]; next: QueuePosition | null }>;
  /**
   * One approval, with the messages, tools and tool_choice of the request it would run unless
   * `withRequest` is false (a check of its status or time, a webhook's data: the prompt may be
   * about 1 MiB).
   */
  get(orgId: string, id: string, withRequest?: boolean): Promise<Approval | null>;
  /**
   * Locks the approval and its invocation (invocation first, as every writer of both does), asks
   * `decide` what to write, and writes it. Concurrent callers queue on the lock, so each sees the
   * outcome of the one before: a resolution happens once. `decide` may read the key lineages of
   * voters through `lineage`, inside the same transaction. Null when there is no such approval.
   */
  change<T>(
    orgId: string | null,
    id: string,
    decide: (locked: LockedApproval, lineage: LineageSource) => Promise<Decision<T>>,
  ): Promise<{ approval: Approval; result: T } | null>;
  /** Pending approvals whose time ran out before `before` (the expiry job's backstop). */
  pastExpiry(before: Date, limit: number): Promise<{ id: string; orgId: string }[]>;
  /**
   * Pending approvals, not yet past their time, whose invocation can no longer run as of `now`:
   * its session is closed or past its expiry, the API key that asked was revoked or expired, or
   * its credential was deleted.
   * Narrowed to one session, one requesting key, or one credential, when `scope` names it.
   */
  stranded(now: Date, limit: number, scope?: StrandedScope): Promise<StrandedApproval[]>;
}

export type StrandedScope = { orgId: string } & (
  { sessionId: string } | { keyId: string } | { credentialRef: string }
);

export interface StrandedApproval {
  id: string;
  orgId: string;
  invocationId: string;
}

/** Ends a pending approval at its `expires_at` (a delayed job per approval). */
export interface ApprovalTimers {
  expireAt(approval: Pick<Approval, 'id' | 'orgId' | 'expiresAt'>): Promise<void>;
}
