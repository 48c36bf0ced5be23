/** What the guardian decides for one action, strongest first: deny > require_approval > modify > allow. */
export type Verdict = 'allow' | 'deny' | 'modify' | 'require_approval';

export interface DecisionReason {
  /** The policy that gave the reason; null for the guardian's built-in checks. */
  policyId: string | null;
  code: string;
  message: string;
}
