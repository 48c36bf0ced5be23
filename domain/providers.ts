/** The provider kinds a credential may name (adapters live in infra/providers). */
export const PROVIDERS = ['openai', 'anthropic', 'openai_compatible', 'mock'] as const;
export type Provider = (typeof PROVIDERS)[number];

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
}

/** One completion request, already governed: the secret is decrypted only for this call. */
export interface CompletionRequest {
  provider: Provider;
  /** The provider's API root; null means the provider's public default. */
  baseUrl: string | null;
  secret: string;
  model: string;
  messages: ChatMessage[];
  /** The completion's output limit. */
  maxTokens: number;
  temperature?: number;
  /** Whole-call deadline; the adapter aborts and reports a retryable `timeout` after it. */
  timeoutMs: number;
  signal?: AbortSignal;
  /** W3C trace context of the calling span; the adapter starts its own span under it and sends it on. */
  trace?: Record<string, string>;
}

export interface CompletionResult {
  output: { role: 'assistant'; content: string };
  usage: { inputTokens: number; outputTokens: number };
  /** The model the provider says answered (may carry a dated suffix). */
  model: string;
}

/**
 * `retryable`: 429, 5xx, timeouts and connection failures, worth another attempt.
 * `final`: any other 4xx or an answer we cannot read; retrying would fail the same way.
 */
export type ProviderFailureKind = 'retryable' | 'final';

/**
 * What a failed call did at the provider, which decides what it is charged:
 * `not_sent`: the request never left (refused connection, blocked host, unreadable credential);
 * `answered`: the provider answered with an error status (providers do not bill those);
 * `unknown`: the request was sent and may have been billed (timeout, connection lost mid-call,
 * a 2xx answer we cannot read).
 */
export type Delivery = 'not_sent' | 'answered' | 'unknown';

const isSuccess = (status: number) => status >= 200 && status < 300;

export class ProviderError extends Error {
  readonly delivery: Delivery;

  constructor(
    readonly kind: ProviderFailureKind,
    /** Stable code for the invocation's error: provider_timeout, provider_rate_limited, ... */
    readonly code: string,
    message: string,
    readonly status: number | null = null,
    /** Seconds the provider asked us to wait (Retry-After), when it said so. */
    readonly retryAfterSeconds: number | null = null,
    /** By default from the status: an error status was answered, no status means nothing was sent. */
    delivery?: Delivery,
  ) {
    super(message);
    this.name = 'ProviderError';
    this.delivery = delivery ?? (status === null ? 'not_sent' : isSuccess(status) ? 'unknown' : 'answered');
  }
}

/** The one port every provider adapter implements. */
export interface ProviderClient {
  complete(request: CompletionRequest): Promise<CompletionResult>;
}
