import { newAuditEvent } from '../audit/new-event';
import type { Clock } from '../clock';
import { actionDigest } from './action-digest';
import type { CompiledPolicies } from './compiled-policies';
import type { CompiledPolicySet } from './compile-policies';
import type { Decision } from './decision';
import type { DecisionLog } from './decision-log.port';
import type { EvaluationRunner } from './evaluation-runner';
import { actionJson, type EvaluationRelay, type EvaluationRequest } from './evaluation';
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

/**
 * The `acs.evaluate` job: decide the action with the same engine that decides every invoke, log
 * the decision with its audit entry, and hand the answer back. Safe to run twice: an answered
 * evaluation is only announced again.
 */
export async function evaluateAction(deps: EvaluateActionDeps, id: string): Promise<'decided' | 'skipped'> {
  if (await deps.relay.answered(id)) {
    await deps.announce(id);
    return 'skipped';
  }
  const request = await deps.relay.request(id);
  if (!request) return 'skipped';
  const result = await decide(deps, request);
  const decision: Decision = {
    id,
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
  await deps.decisions.record(decision, decisionEvent(request, decision));
  await deps.relay.answer(id, decision);
  await deps.announce(id);
  return 'decided';
}
