import type { AgentStatus } from '../model';
import type { ChatMessage } from '../providers';
import type { CostBasis } from './cost-basis';
import type { ApprovalRequirement, ShadowReason } from './policy';
import type { DecisionReason, Verdict } from './verdict';

/** The parts of an agent the guardian decides on. */
export interface AgentGate {
  id: string;
  status: AgentStatus;
  allowedModels: string[];
  credentialRefs: string[];
}

/** What an agent is about to do, as the guardian sees it. */
export interface GuardedAction {
  type: 'llm.invoke';
  model: string;
  messages: ChatMessage[];
  maxTokens: number;
  tool?: { name: string; arguments: unknown };
  /** The function tools offered to the model, as sent: tool rules judge their names, patterns their text. */
  offeredTools?: unknown[];
  /** The `tool_choice` sent with them, as sent. */
  toolChoice?: unknown;
  /** The worst case of the call at the admitted price: what cost rules judge. */
  estimatedCostUsd: number;
}

export interface GuardianInput {
  orgId: string;
  agent: AgentGate | null;
  sessionId: string | null;
  /** The credential the call would use (the request's, else the agent's first). */
  credentialRef: string;
  action: GuardedAction;
  /** The org's policy_version when the caller read it with the action (skips a version check). */
  policyVersion?: number;
  /** What prices the action again once a policy modified it (see evaluatePolicies). */
  costBasis?: CostBasis;
  /**
   * The caller's job can wait: while the org is past its share of evaluation time, the engine
   * throws OrgAtCapacity instead of evaluating (evaluation-time.ts). Unset, it always evaluates.
   */
  deferrable?: boolean;
}

export interface GuardianVerdict {
  verdict: Verdict;
  reasons: DecisionReason[];
  /** What shadow policies would have decided: recorded, never enforced. */
  shadowReasons: ShadowReason[];
  /** The action to run instead, for a `modify` verdict (and a `require_approval` that modifies too). */
  modifiedAction: GuardedAction | null;
  /** Who must approve and by when, for a `require_approval` verdict; null otherwise. */
  approval: ApprovalRequirement | null;
  policyVersion: number;
}

/**
 * Where the org's policies plug in (the policy engine): it sees every action the built-in checks
 * let through. Until an org has policies, everything they let through is allowed.
 */
export interface PolicyEngine {
  evaluate(input: GuardianInput): Promise<GuardianVerdict>;
}

/** A plain allow: no reasons, nothing modified, no approval. A new object each time: callers may change theirs. */
export const allowed = (policyVersion = 0): GuardianVerdict => ({
  verdict: 'allow',
  reasons: [],
  shadowReasons: [],
  modifiedAction: null,
  approval: null,
  policyVersion,
});

export const allowEverything: PolicyEngine = { evaluate: async () => allowed() };

/**
 * A refusal by the agent record itself. The org's policies are not run for it (so no shadow
 * reasons); the caller names the policy_version it was taken under (see Guardian.decide).
 */
const deny = (code: string, message: string): GuardianVerdict => ({
  verdict: 'deny',
  reasons: [{ policyId: null, code, message }],
  shadowReasons: [],
  modifiedAction: null,
  approval: null,
  policyVersion: 0,
});

/** What the agent record forbids of any action: acting while suspended, a model outside its list. */
export function agentCheck(agent: AgentGate | null, model: string | undefined): GuardianVerdict | null {
  if (!agent) return null;
  if (agent.status === 'suspended')
    return deny('agent_suspended', `agent ${agent.id} is suspended; resume it to let it act`);
  if (model !== undefined && !agent.allowedModels.includes(model))
    return deny('model_not_allowed', `model ${model} is not in the allowed_models of agent ${agent.id}`);
  return null;
}

/** The checks every org gets, before its own policies: what the agent record itself forbids. */
function builtinCheck(input: GuardianInput): GuardianVerdict | null {
  const { agent, action } = input;
  if (!agent) return null;
  const refused = agentCheck(agent, action.model);
  if (refused) return refused;
  // As with allowed_models, an empty list allows nothing: the agent record is an allow-list.
  if (!agent.credentialRefs.includes(input.credentialRef))
    return deny(
      'credential_not_allowed',
      `credential ${input.credentialRef} is not in the credential_refs of agent ${agent.id}`,
    );
  return null;
}

/** Decides allow, deny, modify or require_approval for one action: built-in checks, then policies. */
export class Guardian {
  constructor(private readonly engine: PolicyEngine = allowEverything) {}

  async decide(input: GuardianInput): Promise<GuardianVerdict> {
    const refused = builtinCheck(input);
    // Taken under the policy_version the caller read, as the engine's decisions are.
    if (refused) return { ...refused, policyVersion: input.policyVersion ?? 0 };
    return this.engine.evaluate(input);
  }
}
