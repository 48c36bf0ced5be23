import { newAuditEvent } from '../audit/new-event';
import type { Clock } from '../clock';
import { actionDigest } from './action-digest';
import type { CompiledPolicies } from './compiled-policies';
import type { CompiledPolicySet } from './compile-policies';
import type { Decision } from './decision';
import type { DecisionLog } from './decision-log.port';
import type { EvaluationRunner } from './evaluation-runner';
import { actionJson, type Claim, type EvaluationRelay, type EvaluationRequest } from './evaluation';
import { agentCheck } from './guardian';
import type { PolicyDecision } from './policy';

export interface EvaluateActionDeps {
  relay: EvaluationRelay;
  policies: CompiledPolicies<CompiledPolicySet>;
  /** The org's policy_version now: an evaluation sees a change its caller just made. */
  policyVersion(orgId: string): Promise<number>;
  decisions: DecisionLog;
  /** Tells the waiting API process that the evaluation is answered. */
  announce(id: string): Promise<void>;
  /** Runs the engine within the org's share of this process's evaluation time: past it, the job waits its turn. */
  runner: EvaluationRunner;
  clock: Clock;
}

/** The agent record's own checks first (as for an invoke), then the org's policies. */
async function decide(deps: EvaluateActionDeps, request: EvaluationRequest): Promise<PolicyDecision> {
  const { orgId, agentId, sessionId, action } = request;
  const refused = agentCheck(request.agent, action.model);
  const { compiled } = await deps.policies.forOrg(orgId, await deps.policyVersion(orgId));
  if (!refused) return deps.runner.evaluate(compiled, action, { agentId, sessionId }, true);
  const reasons = refused.reasons.map((r) => ({ ...r, ruleIndex: null }));
  return {
    ...refused,
    reasons,
    shadowReasons: [],
    approval: null,
    modifiedAction: null,
    policyVersion: compiled.policyVersion,
  };
}

const decisionEvent = (request: EvaluationRequest, decision: Decision) =>
  newAuditEvent({
    orgId: request.orgId,
    actor: request.requestedBy,
    action: 'acs.evaluated',
    resource: { type: 'decision', id: decision.id },
    at: decision.evaluatedAt,
    requestId: request.requestId,
    outcome: decision.verdict === 'deny' ? 'denied' : 'success',
    details: {
      verdict: decision.verdict,
      action_type: request.action.type,
      reasons: decision.reasons.map((r) => ({ policy_id: r.policyId, code: r.code })),
      policy_version: decision.policyVersion,
      action_digest: decision.actionDigest,
    },
  });

/** The decision on the request, not yet recorded: the engine's verdict under the evaluation's id. */
async function decisionOf(deps: EvaluateActionDeps, request: EvaluationRequest): Promise<Decision> {
  const result = await decide(deps, request);
  return {
    id: request.id,
    orgId: request.orgId,
    invocationId: null,
    sessionId: request.sessionId,
    agentId: request.agentId,
    verdict: result.verdict,
    reasons: result.reasons,
    shadowReasons: result.shadowReasons,
    modifiedAction: result.modifiedAction ? actionJson(result.modifiedAction) : null,
    policyVersion: result.policyVersion,
    actionDigest: actionDigest(actionJson(request.action)),
    evaluatedAt: deps.clock.now(),
  };
}

/**
 * Records the decision with its audit entry, unless an earlier attempt of this job claimed the
 * request, recorded, and died (or lost Redis) before answering: the decision of record is then the
 * answer, as the log keeps it (its modified action without messages), never a second one.
 */
async function recordOnce(
  deps: EvaluateActionDeps,
  request: EvaluationRequest,
  decision: Decision,
  claim: Claim,
) {
  const earlier = claim === 'again' ? await deps.decisions.get(request.orgId, decision.id) : null;
  if (earlier) return earlier;
  await deps.decisions.record(decision, decisionEvent(request, decision));
  return decision;
}

/**
 * The `acs.evaluate` job: decide the action with the same engine that decides every invoke, log
 * the decision with its audit entry, and hand the answer back. Safe to run twice: an answered
 * evaluation is only announced again.
 *
 * The request is claimed after the engine ran (a job past its org's share goes back to the queue
 * from inside the engine, and must not hold a claim while it waits) and before anything is
 * recorded. A claim is refused once the API withdrew the request (its caller was told 503 and may
 * ask again), so nothing is recorded for it; a retry of the job that claimed it (its worker died
 * between the claim and the answer) claims it again and finishes the same evaluation.
 */
export async function evaluateAction(deps: EvaluateActionDeps, id: string): Promise<'decided' | 'skipped'> {
  if (await deps.relay.answered(id)) {
    await deps.announce(id);
    return 'skipped';
  }
  const request = await deps.relay.request(id);
  if (!request) return 'skipped';
  const decision = await decisionOf(deps, request);
  const claim = await deps.relay.claim(id);
  if (!claim) return 'skipped';
  await deps.relay.answer(id, await recordOnce(deps, request, decision, claim));
  await deps.announce(id);
  return 'decided';
}
