import { SYSTEM_ACTOR, type Actor } from '../audit/audit-event';
import { newAuditEvent } from '../audit/new-event';
import type { InvocationError } from '../invocations/invocation';
import { totalsDetails, type InvocationTotals } from '../invocations/outcomes';
import { isOverdue, type Approval, type ApprovalStatus, type VoteDecision } from './approval';
import type { ApprovalChange, Decision, LockedApproval } from './approval-store';
import { lineageOf, oneVoice, speaksFor, type Lineage } from './voter-lineage';

/**
 * What asks an approval to move: a person's vote, its time running out, its invocation's cancel,
 * or its withdrawal once the invocation can no longer run (`error` says why: its session closed,
 * its key revoked), which ends the invocation as the check after an approval would have.
 */
export type Resolution =
  | { kind: 'vote'; by: Actor; decision: VoteDecision; comment: string | null; requestId: string | null }
  | { kind: 'expire' }
  | { kind: 'cancel'; by: Actor; requestId: string | null }
  | { kind: 'withdraw'; by: Actor; requestId: string | null; error: InvocationError };

/**
 * How a resolution went: `recorded` (a vote that leaves it pending), `resolved` (this call decided
 * it), or why nothing was written (`not_pending`, `not_due`, `self`, `duplicate`). `expired`: the vote
 * came after the approval's time: the call expired it instead.
 */
export type ResolutionResult =
  'recorded' | 'resolved' | 'expired' | 'not_pending' | 'not_due' | 'self' | 'duplicate';

const ERRORS: Record<'rejected' | 'expired', InvocationError> = {
  rejected: { errorCode: 'approval_rejected', message: 'a person rejected this request' },
  expired: {
    errorCode: 'approval_expired',
    message: 'no decision was made before the approval timed out; the request was not run',
  },
};

interface EventContext {
  approval: Approval;
  actor: Actor;
  at: Date;
  requestId: string | null;
  /** The invocation's totals, which the entry that ends it carries as every invocation's last entry does. */
  totals: InvocationTotals;
}

const approvalEvent = (c: EventContext, action: string, details: Record<string, unknown> = {}) =>
  newAuditEvent({
    orgId: c.approval.orgId,
    actor: c.actor,
    action,
    resource: { type: 'approval', id: c.approval.id },
    at: c.at,
    requestId: c.requestId,
    outcome: action === 'approval.approved' || action === 'approval.voted' ? 'success' : 'denied',
    details: { invocation_id: c.approval.invocationId, ...details },
  });

type InvocationMove = NonNullable<ApprovalChange['invocation']>;

const invocationEvent = (c: EventContext, { status, error }: InvocationMove) =>
  newAuditEvent({
    orgId: c.approval.orgId,
    actor: c.actor,
    action: status === 'running' ? 'llm.invoke.resumed' : `llm.invoke.${status}`,
    resource: { type: 'invocation', id: c.approval.invocationId },
    at: c.at,
    requestId: c.requestId,
    outcome: status === 'denied' ? 'denied' : status === 'failed' ? 'failure' : 'success',
    details: {
      approval_id: c.approval.id,
      // Its last entry, unless it resumes (QA: a reconciler read no cost_usd from it).
      ...(status === 'running' ? {} : totalsDetails(c.totals)),
      error_code: error?.errorCode ?? null,
    },
  });

const invocationMoveOf = (status: Exclude<ApprovalStatus, 'pending'>): InvocationMove =>
  status === 'approved'
    ? { status: 'running', error: null }
    : status === 'cancelled'
      ? { status: 'cancelled', error: null }
      : { status: 'denied', error: ERRORS[status] };

/**
 * Ends the approval as `status` and moves its invocation on (as the status implies, unless told
 * otherwise), with an entry for each.
 */
function resolveAs(
  c: EventContext,
  status: Exclude<ApprovalStatus, 'pending'>,
  next: InvocationMove = invocationMoveOf(status),
  details: Record<string, unknown> = {},
): ApprovalChange {
  return {
    status,
    invocation: next,
    at: c.at,
    events: [approvalEvent(c, `approval.${status}`, details), invocationEvent(c, next)],
  };
}

type Vote = Extract<Resolution, { kind: 'vote' }>;
/** The lineage of the voter, the requester and every earlier voter, by actor id. */
type Lineages = ReadonlyMap<string, Lineage>;

/**
 * Why this voter may not vote, judged on lineages (a rotated or minted key is no new identity).
 * An actor missing from `lines` is judged as an identity of its own.
 */
function refusedVoter(approval: Approval, r: Vote, lines: Lineages): 'self' | 'duplicate' | null {
  const line = (a: Actor): Lineage => lines.get(a.id) ?? lineageOf(a.id, new Map());
  const voter = line(r.by);
  if (speaksFor(voter, line(approval.requestedBy))) return 'self';
  if (approval.votes.some((v) => oneVoice(line(v.by), voter))) return 'duplicate';
  return null;
}

function vote(locked: LockedApproval, r: Vote, at: Date, lines: Lineages) {
  const { approval } = locked;
  const refused = refusedVoter(approval, r, lines);
  if (refused) return { change: null, result: refused };
  const c = { approval, actor: r.by, at, requestId: r.requestId, totals: locked.invocationTotals };
  const approvals =
    approval.votes.filter((v) => v.decision === 'approve').length + (r.decision === 'approve' ? 1 : 0);
  const voted = approvalEvent(c, 'approval.voted', {
    decision: r.decision,
    approvals,
    approvers_required: approval.approversRequired,
  });
  const recorded = { vote: { by: r.by, decision: r.decision, comment: r.comment, at }, at, events: [voted] };
  // Any rejection decides it; N distinct approvals decide it.
  const status =
    r.decision === 'reject' ? 'rejected' : approvals >= approval.approversRequired ? 'approved' : null;
  if (!status) return { change: recorded, result: 'recorded' as const };
  const resolved = resolveAs(c, status);
  return {
    change: { ...resolved, vote: recorded.vote, events: [voted, ...resolved.events] },
    result: 'resolved' as const,
  };
}

/**
 * Decides what one resolution writes to a locked approval: the rules of who may vote, when it is
 * decided (any rejection, or `approvers_required` distinct approvals) and that nothing moves it
 * once it left `pending`. A vote or a cancel that arrives after the approval's time expires it
 * instead.
 */
export function resolveApproval(
  locked: LockedApproval,
  resolution: Resolution,
  at: Date,
  lines: Lineages,
): Decision<ResolutionResult> {
  const { approval, invocationTotals: totals } = locked;
  if (approval.status !== 'pending') return { change: null, result: 'not_pending' };
  const system = { approval, actor: SYSTEM_ACTOR, at, requestId: null, totals };
  switch (resolution.kind) {
    case 'expire':
      // A job that ran early (a clock ahead of the database's) leaves it for the backstop sweep.
      if (!isOverdue(approval, at)) return { change: null, result: 'not_due' };
      return { change: resolveAs(system, 'expired'), result: 'resolved' };
    case 'cancel':
      // Past its time, the approval has expired (the agent is told so), not been cancelled.
      if (isOverdue(approval, at)) return { change: resolveAs(system, 'expired'), result: 'expired' };
      return {
        change: resolveAs(
          { approval, actor: resolution.by, at, requestId: resolution.requestId, totals },
          'cancelled',
        ),
        result: 'resolved',
      };
    case 'vote':
      if (isOverdue(approval, at)) return { change: resolveAs(system, 'expired'), result: 'expired' };
      return vote(locked, resolution, at, lines);
    case 'withdraw': {
      if (isOverdue(approval, at)) return { change: resolveAs(system, 'expired'), result: 'expired' };
      const { by, requestId, error } = resolution;
      const c = { approval, actor: by, at, requestId, totals };
      const change = resolveAs(c, 'cancelled', { status: 'failed', error }, { reason: error.errorCode });
      return { change, result: 'resolved' };
    }
  }
}
