import type { Actor } from '../audit/audit-event';
import type { DecisionReason, Verdict } from '../policy/verdict';
import type { ChatMessage, FinishReason, Provider, ToolCall } from '../providers';

export const INVOCATION_STATUSES = [
  'queued',
  'evaluating',
  'awaiting_approval',
  'running',
  'succeeded',
  'failed',
  'denied',
  'cancelled',
] as const;
export type InvocationStatus = (typeof INVOCATION_STATUSES)[number];

/** What the agent asked for, as validated; stored so workers never need it in a job payload. */
export interface InvocationRequest {
  messages: ChatMessage[];
  maxTokens: number;
  temperature?: number;
  /** The tool call this invocation is about (what tool rules judge), as `POST /v1/llm/invoke` takes it. */
  tool?: { name: string; arguments: unknown };
  /** Function tools offered to the model and the choice among them (Chat Completions), passed through. */
  tools?: unknown[];
  toolChoice?: unknown;
  /** Answered as a stream of pieces (`stream: true` on /v1/chat/completions). */
  stream?: boolean;
  metadata?: Record<string, unknown>;
}

/** The model's answer: text, the tool calls it asked for, and why it stopped. */
export interface InvocationOutput {
  role: 'assistant';
  content: string;
  toolCalls?: ToolCall[];
  finishReason?: FinishReason;
}

export interface DecisionSummary {
  id: string;
  verdict: Verdict;
  reasons: DecisionReason[];
}

export interface InvocationError {
  errorCode: string;
  message: string;
  /**
   * The contract's extra fields for this code, as an HTTP error would carry them (402
   * budget_exceeded: session_id, cap, limit, remaining, needed; 409 session_not_open: session_id,
   * status): what `/v1/chat/completions` answers with when the invocation ends this way.
   */
  details?: Record<string, unknown>;
}

/** The worst case held against the session's caps while the invocation runs. */
export interface Reservation {
  costMicros: number;
  tokens: number;
}

/**
 * An invocation as a client is answered with it: all of it but the request (the prompt, often
 * most of its size), which no answer shows. The finished signal carries this much.
 */
export type InvocationSummary = Omit<Invocation, 'request'>;

export interface Invocation {
  id: string;
  orgId: string;
  sessionId: string;
  agentId: string | null;
  requestedBy: Actor;
  status: InvocationStatus;
  model: string;
  provider: Provider;
  credentialRef: string;
  request: InvocationRequest;
  /** The price the invocation was admitted at (micro-dollars per million tokens); settlement uses it. */
  price: { inputMicrosPerMtok: number; outputMicrosPerMtok: number };
  reservation: Reservation;
  decision: DecisionSummary | null;
  approvalId: string | null;
  output: InvocationOutput | null;
  usage: { inputTokens: number; outputTokens: number } | null;
  /** What the invocation was charged, over all its provider attempts (usage too). */
  costMicros: number;
  /** Requests the provider received for this invocation: each counts against the call cap. */
  chargedCalls: number;
  /** Provider attempts recorded so far; the next attempt reserves under its own charge id. */
  providerAttempts: number;
  error: InvocationError | null;
  requestId: string | null;
  createdAt: Date;
  updatedAt: Date;
  completedAt: Date | null;
}
