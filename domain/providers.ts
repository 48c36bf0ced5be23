/** The provider kinds a credential may name (adapters live in infra/providers). */
export const PROVIDERS = ['openai', 'anthropic', 'openai_compatible', 'mock'] as const;
export type Provider = (typeof PROVIDERS)[number];

/** A function call the model asked for, as Chat Completions spells it (`arguments` is JSON text). */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  /** An assistant turn that called tools. */
  toolCalls?: ToolCall[];
  /** A tool turn: the id of the call it answers. */
  toolCallId?: string;
}

/** Why the model stopped, in Chat Completions' words. */
export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';

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
  /** Function tools the model may call and the choice among them, passed through as Chat Completions spells them. */
  tools?: unknown[];
  toolChoice?: unknown;
  /** Whole-call deadline; the adapter aborts and reports a retryable `timeout` after it. */
  timeoutMs: number;
  signal?: AbortSignal;
  /** W3C trace context of the calling span; the adapter starts its own span under it and sends it on. */
  trace?: Record<string, string>;
}

export interface CompletionResult {
  output: { role: 'assistant'; content: string; toolCalls?: ToolCall[] };
  usage: { inputTokens: number; outputTokens: number };
  /** The model the provider says answered (may carry a dated suffix). */
  model: string;
  finishReason?: FinishReason;
}

/**
 * A piece of a streamed answer, in the order the provider sent it: text, or part of a tool call
 * (its id and name come first, its arguments in pieces, all under one `index`).
 */
export interface StreamDelta {
  content?: string;
  toolCalls?: { index: number; id?: string; name?: string; arguments?: string }[];
}

/** Whole tool calls as the pieces a stream would have carried them in: one each, in order. */
export const toolCallPieces = (calls: ToolCall[]): NonNullable<StreamDelta['toolCalls']> =>
  calls.map((t, index) => ({ index, id: t.id, name: t.function.name, arguments: t.function.arguments }));

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
    /**
     * For a stream that broke after it started: the text that had arrived, the names and
     * arguments of the tool calls that had, and usage if the provider reported it.
     */
    readonly streamed: {
      content: string;
      toolCallText: string;
      usage: CompletionResult['usage'] | null;
    } | null = null,
  ) {
    super(message);
    this.name = 'ProviderError';
    this.delivery = delivery ?? (status === null ? 'not_sent' : isSuccess(status) ? 'unknown' : 'answered');
  }
}

/** The one port every provider adapter implements. */
export interface ProviderClient {
  complete(request: CompletionRequest): Promise<CompletionResult>;
  /**
   * The same call, streamed: `onDelta` hears each piece as it arrives; resolves with the whole
   * answer and its usage, as `complete` would. A stream that breaks (or is aborted through
   * `request.signal`) after the request was sent rejects with a ProviderError whose delivery is
   * `unknown` and whose `streamed` holds what had arrived.
   */
  stream(request: CompletionRequest, onDelta: (delta: StreamDelta) => void): Promise<CompletionResult>;
}
