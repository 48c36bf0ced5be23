import type { Approval } from '../approvals/approval';
import type { AuditEvent } from '../audit/audit-event';
import type { CapSnapshot } from '../budget/cap-ledger';
import type { CapAmounts } from '../budget/charges';
import type { ModelPrice, Page } from '../model';
import type { AgentGate } from '../policy/guardian';
import type { Provider } from '../providers';
import type { Session, SessionStatus } from '../sessions/session';
import type { Decision } from '../policy/decision';
import type {
  Invocation,
  InvocationError,
  InvocationOutput,
  InvocationRequest,
  InvocationStatus,
} from './invocation';

/** A credential as the API sees it when admitting an invocation: no secret. */
export interface CredentialRefInfo {
  ref: string;
  provider: Provider;
  deleted: boolean;
  /** As the run needs it (decide-at-submit.ts). */
  sealed: SealedCredential;
}

/** Everything the API needs to admit an invocation, read in one round trip. */
export interface InvokeContext {
  session: Session | null;
  /** The agent named in the request, else the session's agent; null when neither names one. */
  agent: AgentGate | null;
  /** The credential named in the request, else the agent's first; null when none is named or known. */
  credential: CredentialRefInfo | null;
  orgPrice: ModelPrice | null;
  /** The org's policy_version as of this read. */
  policyVersion: number;
  /** The agent's version as of this read (null without one). */
  agentVersion: number | null;
}

/** An invocation decided before it was recorded (decide-at-submit.ts), and what it was decided on. */
export interface DecidedInsert {
  invocation: Invocation;
  /** The audit entry of its request. */
  requested: AuditEvent;
  write: DecisionWrite;
  /** As admission read them: the insert is skipped when any has changed. */
  policyVersion: number;
  agentVersion: number | null;
  /** Null (not read) is never as it was. */
  credentialVersion: number | null;
}

export interface InvokeContextQuery {
  sessionId: string;
  agentId: string | null;
  credentialRef: string | null;
  model: string;
}

/** What the guardian evaluates an invocation with. */
export interface GuardianView {
  invocation: Invocation;
  agent: AgentGate | null;
  session: { status: SessionStatus; expiresAt: Date };
  /** The org's policy_version as of this read. */
  policyVersion: number;
  /** The invocation's credential, sealed: an invocation admitted here runs with it (run-invocation.ts). */
  credential: SealedCredential | null;
  /** When the API key that requested it is (or will be, after a rotation's grace) revoked; null for a user. */
  requesterRevokedAt: Date | null;
  /** When that key expires; null for a user. */
  requesterExpiresAt: Date | null;
}

/** A credential as the invoke worker needs it: sealed, opened only for the call. */
export interface SealedCredential {
  ref: string;
  provider: Provider;
  baseUrl: string | null;
  /** Bound into the sealed secret's associated data, with the provider and base_url. */
  version: number;
  sealedSecret: string | null;
  keyId: string;
}

export interface RunView {
  invocation: Invocation;
  credential: SealedCredential | null;
  /** For an invocation resumed by an approval: the digest of the request that was approved. */
  approvedDigest: string | null;
}

/** The guardian's outcome, written with its decision, approval and audit entries in one transaction. */
export interface DecisionWrite {
  invocationId: string;
  decision: Decision;
  /** `running`: admitted (waits for an invoke worker); `awaiting_approval`: waits for people; `denied`: final. */
  status: 'running' | 'awaiting_approval' | 'denied';
  /** Set when the guardian changed the request (a modify verdict), with the worst case it now needs. */
  request?: InvocationRequest;
  reservation?: CapAmounts;
  /** The approval a require_approval verdict opens. */
  approval?: Approval;
  error: InvocationError | null;
  at: Date;
  events: AuditEvent[];
}

/**
 * A final outcome (or, with status `running`, a failed provider attempt before a retry), written
 * with its charge added to the session's usage and the audit entry in one transaction.
 */
export interface FinishWrite {
  invocationId: string;
  /** The write applies only while the invocation is still in one of these. */
  from: InvocationStatus[];
  status: 'running' | 'succeeded' | 'failed' | 'denied' | 'cancelled';
  output: InvocationOutput | null;
  /** This write's charge, added to what the invocation and its session were already charged. */
  usage: { inputTokens: number; outputTokens: number } | null;
  costMicros: number;
  chargedCalls: number;
  /**
   * The provider attempt this write ends (1-based), or null when it ends none. It applies only if
   * the attempts recorded so far are one fewer: the same attempt is never recorded (charged) twice.
   */
  providerAttempt: number | null;
  error: InvocationError | null;
  at: Date;
  event: AuditEvent;
}

/**
 * `applied`: written. `skipped`: the invocation had already left the expected statuses (another
 * run or a cancel won). `cap_violation`: the database refused the usage as past a session cap.
 */
export type WriteOutcome = 'applied' | 'skipped' | 'cap_violation';

export interface InvocationFilter {
  sessionId?: string | undefined;
  status?: InvocationStatus | undefined;
}

export interface HistoryItem {
  kind: 'invocation' | 'decision';
  at: Date;
  invocation?: Invocation;
  decision?: Decision;
}

/**
 * Invocations in PostgreSQL. Writes on the invoke path are batched across concurrent requests
 * (one statement per batch), which is what lets one process carry thousands of invokes a second.
 */
export interface InvocationStore {
  invokeContext(orgId: string, query: InvokeContextQuery): Promise<InvokeContext>;
  /** Inserts a queued invocation and its audit event, atomically. */
  insert(invocation: Invocation, event: AuditEvent): Promise<void>;
  /**
   * Inserts an invocation decided before it was recorded, with its decision (its row, approval
   * and audit entries) and the audit event of its request first, atomically; only while what it
   * was decided on is unchanged ('skipped': nothing was written).
   */
  insertDecided(insert: DecidedInsert): Promise<WriteOutcome>;
  get(orgId: string, id: string): Promise<Invocation | null>;
  list(
    orgId: string,
    filter: InvocationFilter,
    page: { limit: number; after: string | null },
  ): Promise<Page<Invocation>>;
  forGuardian(id: string): Promise<GuardianView | null>;
  decide(write: DecisionWrite): Promise<WriteOutcome>;
  forRun(id: string): Promise<RunView | null>;
  finish(write: FinishWrite): Promise<WriteOutcome>;
  capSnapshot(sessionId: string): Promise<CapSnapshot | null>;
  /**
   * Queued or running invocations last changed before `before`, oldest first: they should have
   * moved on by now (no job picked them up, or their job died).
   */
  stuck(before: Date, limit: number): Promise<Invocation[]>;
  /** Current rows of these invocations (any org), for the reaper. */
  getMany(ids: string[]): Promise<Invocation[]>;
  history(
    orgId: string,
    sessionId: string,
    page: { limit: number; after: { at: Date; id: string } | null },
  ): Promise<{ items: HistoryItem[]; next: { at: Date; id: string } | null }>;
}
