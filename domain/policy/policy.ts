import type { ChatMessage } from '../providers';
import type { DecisionReason, Verdict } from './verdict';

/** The rule types of the contract (../shared/API.md, Policies and approvals). */
export type Rule =
  | { type: 'deny_models'; models: string[] }
  | { type: 'allow_models_only'; models: string[] }
  | { type: 'deny_tools'; tools: string[] }
  /** A regex on message text (RE2 semantics: linear time, no backreferences or lookaround). */
  | { type: 'deny_pattern'; pattern: string; flags?: string }
  /** modify: every match in every message is replaced. */
  | { type: 'redact_pattern'; pattern: string; replacement: string }
  /** modify: clamps max_tokens down to the limit (never raises it). */
  | { type: 'max_tokens'; limit: number }
  | { type: 'max_cost_per_call_usd'; limit: number }
  | {
      type: 'require_approval';
      when: { models?: string[]; tools?: string[]; minEstimatedCostUsd?: number };
      approversRequired: number;
      timeoutSeconds: number;
    };

export type RuleType = Rule['type'];

export const RULE_TYPES: readonly RuleType[] = [
  'deny_models',
  'allow_models_only',
  'deny_tools',
  'deny_pattern',
  'redact_pattern',
  'max_tokens',
  'max_cost_per_call_usd',
  'require_approval',
];

/** `shadow`: evaluated and recorded (shadow_reasons) but never changes a verdict. */
export type PolicyMode = 'enforce' | 'shadow';

/** Which actions a policy applies to: every listed dimension must match; an absent one matches all. */
export interface AppliesTo {
  agentIds?: string[];
  models?: string[];
  actionTypes?: string[];
  tools?: string[];
}

export interface Policy {
  id: string;
  orgId: string;
  name: string;
  description: string | null;
  enabled: boolean;
  /** Higher first when reasons are listed; precedence between verdicts does not depend on it. */
  priority: number;
  mode: PolicyMode;
  appliesTo: AppliesTo;
  rules: Rule[];
  /** The policy's own revision, 1 on creation, bumped by each update. */
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

/** The org's policies as of one `policy_version` (one counter per org, bumped by every change). */
export interface PolicySet {
  orgId: string;
  policyVersion: number;
  /**
   * Set on a set the org never stored (the preview's draft added to its policies): wherever sets
   * are kept by policy_version, one with a variant is kept apart from the stored one.
   */
  variant?: string;
  policies: Policy[];
}

/** What an agent is about to do, as the policy engine sees it (the contract's `action`). */
export interface Action {
  type: string;
  model?: string;
  messages?: ChatMessage[];
  /** The output limit of an `llm.invoke`; `max_tokens` rules clamp it. */
  maxTokens?: number;
  tool?: { name: string; arguments: unknown };
  /**
   * The function tools an `llm.invoke` offers the model, as sent (Chat Completions `tools`): tool
   * rules judge their names, patterns read every string in them (action-tools.ts).
   */
  offeredTools?: unknown[];
  /** The Chat Completions `tool_choice` sent with them: a function it forces is a tool the action involves. */
  toolChoice?: unknown;
  estimatedCostUsd?: number;
}

export interface EvaluationContext {
  agentId: string | null;
  sessionId: string | null;
  /** The cost estimate of a modified action, where the caller can price it (an invoke can). */
  reestimate?: (action: Action) => number;
}

/** A reason from a policy: which policy and rule, with a stable code. */
export interface PolicyReason extends DecisionReason {
  /** Index of the rule in its policy's `rules`; null for reasons not tied to one rule. */
  ruleIndex: number | null;
}

/** What a shadow policy would have decided: recorded, never enforced. */
export interface ShadowReason extends PolicyReason {
  verdict: Verdict;
}

/** The approval a `require_approval` verdict asks for (the strictest of the matching rules). */
export interface ApprovalRequirement {
  policyId: string;
  approversRequired: number;
  timeoutSeconds: number;
}

export interface PolicyDecision {
  verdict: Verdict;
  reasons: PolicyReason[];
  shadowReasons: ShadowReason[];
  /** The action after modification, for a `modify` verdict; null otherwise. */
  modifiedAction: Action | null;
  approval: ApprovalRequirement | null;
  policyVersion: number;
}
