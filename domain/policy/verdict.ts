/** What the guardian decides for one action, strongest first: deny > require_approval > modify > allow. */
export type Verdict = 'allow' | 'deny' | 'modify' | 'require_approval';

export interface DecisionReason {
  /** The policy that gave the reason; null for the guardian's built-in checks. */
  policyId: string | null;
  code: string;
  message: string;
  /** Index of the rule in its policy's `rules`; null or absent for reasons not tied to one rule. */
  ruleIndex?: number | null;
}
