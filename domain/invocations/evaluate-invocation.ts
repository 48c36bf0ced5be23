import type { Approval } from '../approvals/approval';
import type { ApprovalTimers } from '../approvals/approval-store';
import { newApproval } from '../approvals/new-approval';
import { SYSTEM_ACTOR } from '../audit/audit-event';
import { newAuditEvent } from '../audit/new-event';
import { worstCase } from '../budget/charges';
import type { Clock } from '../clock';
import { actionDigest } from '../policy/action-digest';
import type { Decision } from '../policy/decision';
import { actionJson as contractAction } from '../policy/evaluation';
import type { GuardedAction, Guardian, GuardianInput, GuardianVerdict } from '../policy/guardian';
import { newId } from '../ids';
import { microsToUsd } from '../pricing/cost';
import type { DecisionSummary, Invocation, InvocationError, InvocationRequest } from './invocation';
import type { DecisionWrite, GuardianView, InvocationStore, RunView } from './invocation-store';
import { statusesOf } from './lifecycle';
import { endWithoutUsage, recordOutcome } from './outcomes';
import { lapsedWhileWaiting } from './lapsed-while-waiting';
import { decideOnCurrent } from './slow-decision';
import type { CompletionSignal, StageQueue } from './signals';
import type { InvocationJob } from '../jobs';

export interface DecideDeps {
  store: InvocationStore;
  signal: CompletionSignal;
  guardian: Guardian;
  timers: ApprovalTimers;
  clock: Clock;
}

export interface EvaluateDeps extends DecideDeps {
  queue: StageQueue;
}

export interface StageJob {
  invocationId: string;
  orgId: string;
  /** Trace context of this stage's span, handed to the next stage. */
  trace: Record<string, string>;
}

export type EvaluateOutcome = 'admitted' | 'awaiting_approval' | 'denied' | 'failed' | 'skipped';

/**
 * The guardian stage's result. An admitted invocation comes with the job that runs it next and,
 * when this stage (or an earlier attempt of its job) admitted it, the row to run it with; `run` is
 * null for one an approval resumed, which the approval's own invoke job runs. `decidedNow` is
 * false when an earlier attempt decided it: time passed since, which the run checks again.
 */
export type Decided =
  | { outcome: 'admitted'; next: InvocationJob; run: RunView | null; decidedNow: boolean }
  | { outcome: Exclude<EvaluateOutcome, 'admitted'> };

/** The statuses the guardian stage decides (lifecycle.ts). */
const EVALUATE_STATUSES = statusesOf('invocation.evaluate');

/**
 * A modify verdict (or a require_approval that also modifies) changes what runs: the request, and
 * with it the worst case reserved.
 */
function modifiedRequest(invocation: Invocation, verdict: GuardianVerdict): InvocationRequest | undefined {
  const action = verdict.verdict === 'deny' ? null : verdict.modifiedAction;
  if (!action) return undefined;
  return {
    ...invocation.request,
    messages: action.messages,
    maxTokens: action.maxTokens,
    ...(action.tool ? { tool: action.tool } : {}),
    ...(action.offeredTools ? { tools: action.offeredTools } : {}),
    ...(action.toolChoice !== undefined ? { toolChoice: action.toolChoice } : {}),
  };
}

/**
 * The invoke's action as the contract spells it, for the digest and the decision log: what the
 * agent asked, without the cost estimate the guardian derives from it.
 */
const actionJson = ({ estimatedCostUsd: _derived, ...action }: GuardedAction) => contractAction(action);

/**
 * SHA-256 of what the invocation asks (model, messages, max_tokens, tools, tool_choice, tool) as the
 * contract spells it. Taken of the row before its decision, that is the request as submitted: the
 * decision log keeps it, since a modify verdict rewrites the row.
 */
export const submittedDigest = (invocation: Pick<Invocation, 'model' | 'request' | 'reservation'>): string =>
  actionDigest(actionJson(guardedAction(invocation)));

/**
 * The digest is of the action the guardian saw (the request as submitted); the modified action is
 * kept without its messages and tool definitions: the invocation row holds the modified request.
 */
const decisionOf = (invocation: Invocation, verdict: GuardianVerdict, at: Date): Decision => ({
  id: newId('dec'),
  orgId: invocation.orgId,
  invocationId: invocation.id,
  sessionId: invocation.sessionId,
  agentId: invocation.agentId,
  verdict: verdict.verdict,
  reasons: verdict.reasons,
  shadowReasons: verdict.shadowReasons,
  modifiedAction: verdict.modifiedAction ? actionJson(verdict.modifiedAction) : null,
  policyVersion: verdict.policyVersion,
  actionDigest: submittedDigest(invocation),
  evaluatedAt: at,
});

const DECISION_ACTIONS = {
  running: 'llm.invoke.allowed',
  awaiting_approval: 'llm.invoke.awaiting_approval',
  denied: 'llm.invoke.denied',
} as const;

/** One entry records both the decision and the state change it makes. */
const decisionEvent = (invocation: Invocation, decision: Decision, status: DecisionWrite['status']) =>
  newAuditEvent({
    orgId: invocation.orgId,
    actor: SYSTEM_ACTOR,
    action: DECISION_ACTIONS[status],
    resource: { type: 'invocation', id: invocation.id },
    at: decision.evaluatedAt,
    requestId: invocation.requestId,
    outcome: status === 'denied' ? 'denied' : 'success',
    details: {
      decision_id: decision.id,
      verdict: decision.verdict,
      reasons: decision.reasons.map((r) => ({ policy_id: r.policyId, code: r.code })),
      policy_version: decision.policyVersion,
    },
  });

const approvalEvent = (approval: Approval, at: Date, requestId: string | null) =>
  newAuditEvent({
    orgId: approval.orgId,
    actor: SYSTEM_ACTOR,
    action: 'approval.requested',
    resource: { type: 'approval', id: approval.id },
    at,
    requestId,
    details: {
      invocation_id: approval.invocationId,
      policy_id: approval.policyId,
      policy_version: approval.policyVersion,
      approvers_required: approval.approversRequired,
      request_digest: approval.requestDigest,
      expires_at: approval.expiresAt.toISOString(),
    },
  });

const STATUS_OF = {
  allow: 'running',
  modify: 'running',
  require_approval: 'awaiting_approval',
  deny: 'denied',
} as const;

export function decisionWrite(invocation: Invocation, verdict: GuardianVerdict, at: Date): DecisionWrite {
  const decision = decisionOf(invocation, verdict, at);
  const status = STATUS_OF[verdict.verdict];
  const modified = modifiedRequest(invocation, verdict);
  const request = modified ?? invocation.request;
  const reservation = modified
    ? worstCase(modified.messages, modified.maxTokens, invocation.price, modified.tools)
    : undefined;
  const approval =
    status === 'awaiting_approval'
      ? newApproval(
          invocation,
          request,
          reservation?.costMicros ?? invocation.reservation.costMicros,
          verdict,
          at,
        )
      : undefined;
  return {
    invocationId: invocation.id,
    decision,
    status,
    ...(modified ? { request: modified, reservation } : {}),
    ...(approval ? { approval } : {}),
    error:
      status === 'denied'
        ? { errorCode: 'guardian_denied', message: verdict.reasons.map((r) => r.message).join('; ') }
        : null,
    at,
    events: [
      decisionEvent(invocation, decision, status),
      ...(approval ? [approvalEvent(approval, at, invocation.requestId)] : []),
    ],
  };
}

const runJob = (job: StageJob): InvocationJob => ({
  invocation_id: job.invocationId,
  org_id: job.orgId,
  trace: job.trace,
});

/**
 * Why a queued invocation is not decided at all: its session closed or expired, the key that
 * asked for it was revoked, or its credential was deleted, while it was queued.
 */
const stoppedWhileQueued = (view: GuardianView, at: Date): InvocationError | null =>
  lapsedWhileWaiting(view, at, 'it was not run')?.error ?? null;

/** An invocation stopped while it was queued never runs. */
async function failQueued(
  deps: DecideDeps,
  view: GuardianView,
  error: InvocationError,
  at: Date,
): Promise<Decided> {
  const write = endWithoutUsage(view.invocation, EVALUATE_STATUSES, 'failed', error, at);
  const written = await recordOutcome(deps, view.invocation, write);
  return { outcome: written === 'applied' ? 'failed' : 'skipped' };
}

/** A verdict reached before the invocation was recorded (decide-at-submit.ts), when, and on what. */
export interface PriorVerdict {
  verdict: GuardianVerdict;
  at: Date;
  decidedOn: GuardianView;
}

/**
 * The guardian stage: decide a queued invocation and record the decision with its audit entry.
 * Safe to run twice: a decided invocation is not decided again. With a `prior` verdict, one the
 * API reached before it recorded the invocation, that verdict is recorded after this fresh read
 * instead of deciding again (as a slow decision's is), unless the policies or the agent it was
 * reached on have changed since (decideOnCurrent).
 */
export async function decideInvocation(
  deps: DecideDeps,
  job: StageJob,
  prior?: PriorVerdict,
): Promise<Decided> {
  const view = await deps.store.forGuardian(job.invocationId);
  if (!view) return { outcome: 'skipped' };
  const { invocation } = view;
  if (statusesOf('invocation.run').includes(invocation.status)) {
    // Admitted by an earlier attempt that stopped before it ran it (the row as read is what the
    // run needs); or resumed by an approval, whose own invoke job runs it.
    const run = invocation.approvalId
      ? null
      : { invocation, credential: view.credential, approvedDigest: null };
    return { outcome: 'admitted', next: runJob(job), run, decidedNow: false };
  }
  if (!EVALUATE_STATUSES.includes(invocation.status)) return { outcome: 'skipped' };
  const readAt = deps.clock.now();
  const stopped = stoppedWhileQueued(view, readAt);
  if (stopped) return failQueued(deps, view, stopped, readAt);
  // Deferrable: nothing is written or reserved yet, so the job may go back to wait its org's turn.
  const inputOf = (current: GuardianView) => ({ ...guardianInput(current), deferrable: true });
  const decided = await decideOnCurrent(deps, view, inputOf, prior && { ...prior, view });
  // A slow decision read the session and key again: what changed while it waited counts too.
  const stoppedMeanwhile = stoppedWhileQueued(decided.view, decided.at);
  if (stoppedMeanwhile) return failQueued(deps, decided.view, stoppedMeanwhile, decided.at);
  const write = decisionWrite(invocation, decided.verdict, decided.at);
  if ((await deps.store.decide(write)) !== 'applied') return { outcome: 'skipped' };
  return followDecision(deps, view, write, job);
}

/**
 * What a recorded decision leads to: the run of what it admitted (next, in this job), the wait for
 * people, or the denial told to waiting clients.
 */
export async function followDecision(
  deps: Pick<DecideDeps, 'signal' | 'timers'>,
  view: GuardianView,
  write: DecisionWrite,
  job: StageJob,
): Promise<Decided> {
  if (write.status === 'running')
    return { outcome: 'admitted', next: runJob(job), run: admitted(view, write), decidedNow: true };
  if (write.approval) return { outcome: await awaitApproval(deps, write.approval) };
  await deps.signal.finished(asDecided(view.invocation, write));
  return { outcome: 'denied' };
}

/**
 * The `guardian` job: the guardian stage, then an admitted invocation goes to the invoke queue
 * under its own job id (so however often this runs, it is one job).
 */
export async function evaluateInvocation(deps: EvaluateDeps, job: StageJob): Promise<EvaluateOutcome> {
  const decided = await decideInvocation(deps, job);
  if (decided.outcome === 'admitted') await deps.queue.enqueue('invocation.run', decided.next);
  return decided.outcome;
}

/**
 * The invocation now waits for people, holding no job and no reservation (it reserves when it
 * resumes). Its approval's expiry is a delayed job; the sweep of overdue approvals backs it up.
 */
async function awaitApproval(
  deps: Pick<DecideDeps, 'timers'>,
  approval: Approval,
): Promise<'awaiting_approval'> {
  await deps.timers.expireAt(approval);
  return 'awaiting_approval';
}

/** What the invocation asks to do, as the guardian sees it. */
const guardedAction = (invocation: Pick<Invocation, 'model' | 'request' | 'reservation'>): GuardedAction => ({
  type: 'llm.invoke',
  model: invocation.model,
  messages: invocation.request.messages,
  maxTokens: invocation.request.maxTokens,
  ...(invocation.request.tool ? { tool: invocation.request.tool } : {}),
  ...(invocation.request.tools?.length ? { offeredTools: invocation.request.tools } : {}),
  ...(invocation.request.toolChoice !== undefined ? { toolChoice: invocation.request.toolChoice } : {}),
  estimatedCostUsd: microsToUsd(invocation.reservation.costMicros),
});

export const guardianInput = ({ invocation, agent, policyVersion }: GuardianView): GuardianInput => ({
  policyVersion,
  orgId: invocation.orgId,
  agent,
  sessionId: invocation.sessionId,
  credentialRef: invocation.credentialRef,
  action: guardedAction(invocation),
  // As decisionWrite reserves for a modified request.
  costBasis: { price: invocation.price, tools: invocation.request.tools },
});

const summaryOf = ({ decision }: DecisionWrite): DecisionSummary => ({
  id: decision.id,
  verdict: decision.verdict,
  reasons: decision.reasons,
});

/** The invocation as its decision left it (the columns the decide write sets). */
export const asDecided = (invocation: Invocation, write: DecisionWrite): Invocation => ({
  ...invocation,
  status: write.status,
  decision: summaryOf(write),
  request: write.request ?? invocation.request,
  reservation: write.reservation
    ? { costMicros: write.reservation.costMicros, tokens: write.reservation.tokens }
    : invocation.reservation,
  approvalId: write.approval?.id ?? invocation.approvalId,
  error: write.error,
  updatedAt: write.at,
  completedAt: write.status === 'denied' ? write.at : null,
});

/**
 * The row as an admitting decision left it, with the credential read alongside: what the invoke
 * stage would read next, had it to.
 */
const admitted = ({ invocation, credential }: GuardianView, write: DecisionWrite): RunView => ({
  invocation: asDecided(invocation, write),
  credential,
  approvedDigest: null,
});
