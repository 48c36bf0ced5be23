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
import { statusAt } from '../sessions/session';
import type { Invocation, InvocationRequest } from './invocation';
import type { DecisionWrite, GuardianView, InvocationStore } from './invocation-store';
import { canMove, statusesOf } from './lifecycle';
import { endWithoutUsage, recordOutcome } from './outcomes';
import type { CompletionSignal, StageQueue } from './signals';

export interface EvaluateDeps {
  store: InvocationStore;
  queue: StageQueue;
  signal: CompletionSignal;
  guardian: Guardian;
  clock: Clock;
}

export interface StageJob {
  invocationId: string;
  orgId: string;
  /** Trace context of this stage's span, handed to the next stage. */
  trace: Record<string, string>;
}

export type EvaluateOutcome = 'admitted' | 'denied' | 'failed' | 'skipped';

/** The statuses the guardian stage decides (lifecycle.ts). */
const EVALUATE_STATUSES = statusesOf('invocation.evaluate');

/**
 * Verdicts this pipeline can act on. While the lifecycle has no way into `awaiting_approval`, a
 * require_approval verdict fails closed, as a deny that says why.
 */
function actionable(verdict: GuardianVerdict): GuardianVerdict {
  if (verdict.verdict !== 'require_approval' || canMove('queued', 'awaiting_approval')) return verdict;
  return {
    ...verdict,
    verdict: 'deny',
    reasons: [
      ...verdict.reasons,
      {
        policyId: null,
        code: 'approvals_unavailable',
        message: 'approval is required but approvals are not enabled',
      },
    ],
  };
}

/** A modify verdict changes what runs: the request, and with it the worst case reserved. */
function modifiedRequest(invocation: Invocation, verdict: GuardianVerdict): InvocationRequest | undefined {
  const action = verdict.verdict === 'modify' ? verdict.modifiedAction : null;
  if (!action) return undefined;
  return { ...invocation.request, messages: action.messages, maxTokens: action.maxTokens };
}

/**
 * The invoke's action as the contract spells it, for the digest and the decision log: what the
 * agent asked, without the cost estimate the guardian derives from it.
 */
const actionJson = ({ estimatedCostUsd: _derived, ...action }: GuardedAction) => contractAction(action);

/**
 * The digest is of the action the guardian saw (the request as submitted); the modified action is
 * kept without its messages: the invocation row holds the modified request itself.
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
  actionDigest: actionDigest(actionJson(guardedAction(invocation))),
  evaluatedAt: at,
});

/** One entry records both the decision and the state change it makes. */
const decisionEvent = (invocation: Invocation, decision: Decision, admitted: boolean) =>
  newAuditEvent({
    orgId: invocation.orgId,
    actor: SYSTEM_ACTOR,
    action: admitted ? 'llm.invoke.allowed' : 'llm.invoke.denied',
    resource: { type: 'invocation', id: invocation.id },
    at: decision.evaluatedAt,
    requestId: invocation.requestId,
    outcome: admitted ? 'success' : 'denied',
    details: {
      decision_id: decision.id,
      verdict: decision.verdict,
      reasons: decision.reasons.map((r) => ({ policy_id: r.policyId, code: r.code })),
      policy_version: decision.policyVersion,
    },
  });

function decisionWrite(invocation: Invocation, verdict: GuardianVerdict, at: Date): DecisionWrite {
  const decision = decisionOf(invocation, verdict, at);
  const admitted = verdict.verdict === 'allow' || verdict.verdict === 'modify';
  const request = modifiedRequest(invocation, verdict);
  return {
    invocationId: invocation.id,
    decision,
    status: admitted ? 'running' : 'denied',
    ...(request
      ? { request, reservation: worstCase(request.messages, request.maxTokens, invocation.price) }
      : {}),
    error: admitted
      ? null
      : { errorCode: 'guardian_denied', message: verdict.reasons.map((r) => r.message).join('; ') },
    at,
    event: decisionEvent(invocation, decision, admitted),
  };
}

const runJob = (job: StageJob) => ({ invocation_id: job.invocationId, org_id: job.orgId, trace: job.trace });

/** A session closed or expired while the invocation was queued: it never runs. */
async function failClosedSession(deps: EvaluateDeps, view: GuardianView, at: Date): Promise<EvaluateOutcome> {
  const status = statusAt(view.session, at);
  const error = {
    errorCode: 'session_not_open',
    message: `session ${view.invocation.sessionId} is ${status}`,
  };
  const write = endWithoutUsage(view.invocation, EVALUATE_STATUSES, 'failed', error, at);
  return (await recordOutcome(deps, view.invocation, write)) === 'applied' ? 'failed' : 'skipped';
}

/**
 * The `guardian` job: decide a queued invocation, record the decision with its audit entry, and
 * hand an admitted one to the invoke queue. Safe to run twice: a decided invocation is not
 * decided again, and an admitted one is only (re)enqueued under its own job id.
 */
export async function evaluateInvocation(deps: EvaluateDeps, job: StageJob): Promise<EvaluateOutcome> {
  const view = await deps.store.forGuardian(job.invocationId);
  if (!view) return 'skipped';
  const { invocation } = view;
  if (statusesOf('invocation.run').includes(invocation.status)) {
    // Decided by an earlier run that stopped before it enqueued the next stage.
    await deps.queue.enqueue('invocation.run', runJob(job));
    return 'admitted';
  }
  if (!EVALUATE_STATUSES.includes(invocation.status)) return 'skipped';
  const at = deps.clock.now();
  if (statusAt(view.session, at) !== 'open') return failClosedSession(deps, view, at);
  const write = decisionWrite(invocation, actionable(await deps.guardian.decide(guardianInput(view))), at);
  if ((await deps.store.decide(write)) !== 'applied') return 'skipped';
  if (write.status === 'running') {
    await deps.queue.enqueue('invocation.run', runJob(job));
    return 'admitted';
  }
  await deps.signal.finished(denied(invocation, write));
  return 'denied';
}

/** What the invocation asks to do, as the guardian sees it. */
const guardedAction = (invocation: Invocation): GuardedAction => ({
  type: 'llm.invoke',
  model: invocation.model,
  messages: invocation.request.messages,
  maxTokens: invocation.request.maxTokens,
  ...(invocation.request.tool ? { tool: invocation.request.tool } : {}),
  estimatedCostUsd: microsToUsd(invocation.reservation.costMicros),
});

const guardianInput = ({ invocation, agent, policyVersion }: GuardianView): GuardianInput => ({
  policyVersion,
  orgId: invocation.orgId,
  agent,
  sessionId: invocation.sessionId,
  credentialRef: invocation.credentialRef,
  action: guardedAction(invocation),
});

/** The invocation as the denial left it, for waiting clients. */
const denied = (invocation: Invocation, write: DecisionWrite): Invocation => ({
  ...invocation,
  status: 'denied',
  decision: { id: write.decision.id, verdict: write.decision.verdict, reasons: write.decision.reasons },
  error: write.error,
  updatedAt: write.at,
  completedAt: write.at,
});
