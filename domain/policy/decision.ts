import type { ShadowReason } from './policy';
import type { DecisionReason, Verdict } from './verdict';

/**
 * A guardian decision, kept on its own: the decision log lists them, the session history beside
 * invocations. The log never holds prompt text: the action is kept as its digest, and the modified
 * action is stored without its messages and tool definitions (withoutPromptText, applied where
 * decisions are stored; an invocation keeps its modified request on its own row).
 */
export interface Decision {
  id: string;
  orgId: string;
  invocationId: string | null;
  sessionId: string | null;
  agentId: string | null;
  verdict: Verdict;
  reasons: DecisionReason[];
  /** What shadow policies would have decided; they never change the verdict. */
  shadowReasons: ShadowReason[];
  /** The action after modification (contract shape, snake_case); null unless modify. Stored without `messages`. */
  modifiedAction: unknown;
  policyVersion: number;
  /** SHA-256 (hex) of the canonical JSON of the action decided (action-digest.ts); null if unknown. */
  actionDigest: string | null;
  evaluatedAt: Date;
}

/**
 * The action as a decision may keep it: its `messages` (the prompt text) and the definitions of
 * the tools it offers (`tools`: text the model reads as well, often kilobytes) dropped.
 */
export function withoutPromptText(action: unknown): unknown {
  if (action === null || typeof action !== 'object' || Array.isArray(action)) return action ?? null;
  const {
    messages: _dropped,
    tools: _definitions,
    tool_choice: _choice,
    ...kept
  } = action as Record<string, unknown>;
  return kept;
}
