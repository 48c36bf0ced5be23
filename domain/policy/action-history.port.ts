import type { Rates } from '../pricing/cost';
import type { ChatMessage } from '../providers';

/** One recorded invocation: what the guardian stage judged it on (evaluate-invocation.ts). */
export interface RecordedInvocation {
  id: string;
  createdAt: Date;
  agentId: string | null;
  sessionId: string;
  model: string;
  /** The request as the invocation row holds it: after the guardian's modification, if any. */
  messages: ChatMessage[];
  maxTokens: number;
  tool?: { name: string; arguments: unknown };
  /** The function tools it offered the model, as the row holds them (after any redaction). */
  offeredTools?: unknown[];
  /** The `tool_choice` sent with them. */
  toolChoice?: unknown;
  /** The worst case reserved for the call, which cost rules judge. */
  reserveMicros: number;
  /** The rates it was admitted at, to price it again as a draft's modification leaves it. */
  price: Rates;
  /**
   * The agent record itself refused it (suspended, a model or credential outside its lists): the
   * guardian decides that before any policy, so no policy changes its verdict.
   */
  refusedByAgent: boolean;
}

/** Where a page of history ends: it is read oldest first by (created_at, id). */
export interface HistoryPosition {
  at: Date;
  id: string;
}

/** The org's recorded invocations, read in pages for the impact preview. */
export interface ActionHistory {
  /** Invocations created in [since, until), oldest first, after `after`, at most `limit`. */
  page(
    orgId: string,
    window: { since: Date; until: Date },
    after: HistoryPosition | null,
    limit: number,
  ): Promise<RecordedInvocation[]>;
}
