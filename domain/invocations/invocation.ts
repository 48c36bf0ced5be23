import type { Actor } from '../audit/audit-event';
import type { ChatMessage, Provider } from '../providers';

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

const TERMINAL: ReadonlySet<InvocationStatus> = new Set(['succeeded', 'failed', 'denied', 'cancelled']);
export const isTerminal = (status: InvocationStatus): boolean => TERMINAL.has(status);

/** Before the provider is called, an invocation may still be cancelled. */
export const CANCELLABLE: readonly InvocationStatus[] = ['queued', 'evaluating', 'awaiting_approval'];

/** What the agent asked for, as validated; stored so workers never need it in a job payload. */
export interface InvocationRequest {
  messages: ChatMessage[];
  maxTokens: number;
  temperature?: number;
  tool?: { name: string; arguments: unknown };
  metadata?: Record<string, unknown>;
}

export interface DecisionReason {
  /** The policy that gave the reason; null for the guardian's built-in checks. */
  policyId: string | null;
  code: string;
  message: string;
}

export type Verdict = 'allow' | 'deny' | 'modify' | 'require_approval';

export interface DecisionSummary {
  id: string;
  verdict: Verdict;
  reasons: DecisionReason[];
}

export interface InvocationError {
  errorCode: string;
  message: string;
}

/** The worst case held against the session's caps while the invocation runs. */
export interface Reservation {
  costMicros: number;
  tokens: number;
}

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
  output: { role: 'assistant'; content: string } | null;
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

/** A guardian decision, kept on its own: the session history lists them beside invocations. */
export interface Decision {
  id: string;
  orgId: string;
  invocationId: string | null;
  sessionId: string | null;
  agentId: string | null;
  verdict: Verdict;
  reasons: DecisionReason[];
  modifiedAction: unknown;
  policyVersion: number;
  evaluatedAt: Date;
}
