import type { CompiledPolicies } from './compiled-policies';
import type { CompiledPolicySet } from './compile-policies';
import type { EvaluationRunner } from './evaluation-runner';
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
  ...(a.toolChoice !== undefined ? { toolChoice: a.toolChoice } : {}),
});

/**
 * The engine's modified action, back in the guardian's terms (messages, max_tokens, the tool's
 * arguments, the offered tools' definitions and the tool choice change).
 */
const toGuarded = (original: GuardedAction, modified: Action): GuardedAction => ({
  ...original,
  messages: modified.messages ?? original.messages,
  maxTokens: modified.maxTokens ?? original.maxTokens,
  ...(modified.tool ? { tool: modified.tool } : {}),
  ...(modified.offeredTools ? { offeredTools: modified.offeredTools } : {}),
  ...(modified.toolChoice !== undefined ? { toolChoice: modified.toolChoice } : {}),
});

/**
 * The org's own policies behind the guardian's port: the compiled set of the org's current
 * policy_version (or of the version the caller read with the action), evaluated by the pure engine
 * within the org's share of this process's evaluation time (evaluation-runner.ts).
 */
export class OrgPolicyEngine implements PolicyEngine {
  constructor(
    private readonly policies: CompiledPolicies<CompiledPolicySet>,
    private readonly runner: EvaluationRunner,
  ) {}

  async evaluate(input: GuardianInput): Promise<GuardianVerdict> {
    const { compiled } = await this.policies.forOrg(input.orgId, input.policyVersion);
    const context = {
      agentId: input.agent?.id ?? null,
      sessionId: input.sessionId,
      ...(input.costBasis ? { costBasis: input.costBasis } : {}),
    };
    const action = toAction(input.action);
    const decision = await this.runner.evaluate(compiled, action, context, input.deferrable === true);
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
