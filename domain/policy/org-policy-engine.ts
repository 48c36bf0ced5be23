import type { CompiledPolicies } from './compiled-policies';
import type { CompiledPolicySet } from './compile-policies';
import { evaluateInShare, type EvaluationTime } from './evaluation-time';
import type { GuardedAction, GuardianInput, GuardianVerdict, PolicyEngine } from './guardian';
import type { Action } from './policy';

const toAction = (a: GuardedAction): Action => ({
  type: a.type,
  model: a.model,
  messages: a.messages,
  maxTokens: a.maxTokens,
  estimatedCostUsd: a.estimatedCostUsd,
  ...(a.tool ? { tool: a.tool } : {}),
  ...(a.offeredTools?.length ? { offeredTools: a.offeredTools } : {}),
});

/** The engine's modified action, back in the guardian's terms (messages, max_tokens and the tool's arguments change). */
const toGuarded = (original: GuardedAction, modified: Action): GuardedAction => ({
  ...original,
  messages: modified.messages ?? original.messages,
  maxTokens: modified.maxTokens ?? original.maxTokens,
  ...(modified.tool ? { tool: modified.tool } : {}),
});

/**
 * The org's own policies behind the guardian's port: the compiled set of the org's current
 * policy_version (or of the version the caller read with the action), evaluated by the pure engine
 * within the org's share of this process's evaluation time.
 */
export class OrgPolicyEngine implements PolicyEngine {
  constructor(
    private readonly policies: CompiledPolicies<CompiledPolicySet>,
    private readonly time: EvaluationTime,
  ) {}

  async evaluate(input: GuardianInput): Promise<GuardianVerdict> {
    const { compiled } = await this.policies.forOrg(input.orgId, input.policyVersion);
    const { reestimate } = input;
    const context = {
      agentId: input.agent?.id ?? null,
      sessionId: input.sessionId,
      ...(reestimate ? { reestimate: (a: Action) => reestimate(toGuarded(input.action, a)) } : {}),
    };
    const action = toAction(input.action);
    const decision = evaluateInShare(this.time, input.deferrable === true, compiled, action, context);
    return {
      verdict: decision.verdict,
      reasons: decision.reasons,
      shadowReasons: decision.shadowReasons,
      modifiedAction: decision.modifiedAction ? toGuarded(input.action, decision.modifiedAction) : null,
      approval: decision.approval,
      policyVersion: decision.policyVersion,
    };
  }
}
