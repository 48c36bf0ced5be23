import {
  ProviderError,
  type ChatMessage,
  type CompletionRequest,
  type CompletionResult,
  type FinishReason,
  type ProviderClient,
  type StreamDelta,
  type ToolCall,
} from '../../domain/providers';
import { callProvider, isCount, joinUrl } from './call-provider';
import type { HttpTransport } from './http-transport';
import { badResponse, providerMessage } from './provider-errors';
import { eventJson } from './sse-events';
import { streamProvider, toolCallTextOf, type StreamParser } from './stream-provider';

const OPENAI_BASE = 'https://api.openai.com/v1';

interface ChatCompletion {
  model?: unknown;
  choices?: { message?: { content?: unknown; tool_calls?: unknown }; finish_reason?: unknown }[];
  usage?: { prompt_tokens?: unknown; completion_tokens?: unknown };
}

const FINISH_REASONS = new Set(['stop', 'length', 'tool_calls', 'content_filter']);
const finishOf = (reason: unknown): FinishReason | undefined =>
  typeof reason === 'string' && FINISH_REASONS.has(reason) ? (reason as FinishReason) : undefined;

/** A message in the Chat Completions wire shape. */
const toWire = (m: ChatMessage) => ({
  role: m.role,
  content: m.toolCalls?.length && !m.content ? null : m.content,
  ...(m.toolCalls?.length ? { tool_calls: m.toolCalls } : {}),
  ...(m.toolCallId !== undefined ? { tool_call_id: m.toolCallId } : {}),
});

const isToolCall = (c: unknown): c is ToolCall => {
  const call = c as ToolCall;
  return (
    typeof call?.id === 'string' &&
    typeof call.function?.name === 'string' &&
    typeof call.function.arguments === 'string'
  );
};

function toolCallsOf(raw: unknown): ToolCall[] | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!Array.isArray(raw) || !raw.every(isToolCall)) throw badResponse('tool_calls are not function calls');
  return raw.map((c) => ({
    id: c.id,
    type: 'function',
    function: { name: c.function.name, arguments: c.function.arguments },
  }));
}

/**
 * Chat Completions, for `openai` and for `openai_compatible` servers (vLLM, Ollama, OpenRouter).
 * OpenAI's own API wants `max_completion_tokens` (its reasoning models refuse `max_tokens`);
 * compatible servers mostly know only `max_tokens`, so each flavour sends the field it expects.
 * Tools and tool calls pass through in the same shape.
 */
export class OpenAiChat implements ProviderClient {
  constructor(
    private readonly transport: HttpTransport,
    private readonly flavour: 'openai' | 'openai_compatible',
  ) {}

  async complete(req: CompletionRequest): Promise<CompletionResult> {
    const json = (await callProvider(
      this.transport,
      req,
      this.url(req),
      this.headers(req),
      this.body(req),
    )) as ChatCompletion;
    return toResult(json, req.model);
  }

  stream(req: CompletionRequest, onDelta: (delta: StreamDelta) => void): Promise<CompletionResult> {
    const body = { ...this.body(req), stream: true, stream_options: { include_usage: true } };
    return streamProvider(
      this.transport,
      req,
      this.url(req),
      this.headers(req),
      body,
      {
        events: (pieces) => new ChunkParser(req.model, pieces),
        whole: (json) => toResult(json as ChatCompletion, req.model),
      },
      onDelta,
    );
  }

  private url(req: CompletionRequest): string {
    const base = req.baseUrl ?? (this.flavour === 'openai' ? OPENAI_BASE : null);
    if (!base)
      throw new ProviderError(
        'final',
        'provider_misconfigured',
        'an openai_compatible credential needs a base_url',
      );
    return joinUrl(base, '/chat/completions');
  }

  private headers(req: CompletionRequest): Record<string, string> {
    return { authorization: `Bearer ${req.secret}` };
  }

  private body(req: CompletionRequest): Record<string, unknown> {
    const limit = this.flavour === 'openai' ? 'max_completion_tokens' : 'max_tokens';
    return {
      model: req.model,
      messages: req.messages.map(toWire),
      [limit]: req.maxTokens,
      ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
      ...(req.tools?.length ? { tools: req.tools } : {}),
      ...(req.toolChoice !== undefined ? { tool_choice: req.toolChoice } : {}),
    };
  }
}

function toResult(json: ChatCompletion, requested: string): CompletionResult {
  const choice = json.choices?.[0];
  const content = choice?.message?.content;
  const { prompt_tokens: input, completion_tokens: output } = json.usage ?? {};
  if (!Array.isArray(json.choices) || json.choices.length === 0) throw badResponse('no choices');
  if (content !== null && content !== undefined && typeof content !== 'string')
    throw badResponse('content is not text');
  if (!isCount(input) || !isCount(output)) throw badResponse('no token usage');
  const toolCalls = toolCallsOf(choice?.message?.tool_calls);
  const finishReason = finishOf(choice?.finish_reason);
  return {
    output: { role: 'assistant', content: content ?? '', ...(toolCalls?.length ? { toolCalls } : {}) },
    usage: { inputTokens: input, outputTokens: output },
    model: typeof json.model === 'string' ? json.model : requested,
    ...(finishReason ? { finishReason } : {}),
  };
}

interface ChunkToolCall {
  index?: unknown;
  id?: unknown;
  function?: { name?: unknown; arguments?: unknown };
}

const isName = (value: unknown): value is string => typeof value === 'string' && value !== '';

/** `chat.completion.chunk` events: text and tool-call pieces, then the usage chunk and [DONE]. */
class ChunkParser implements StreamParser {
  content = '';
  usage: CompletionResult['usage'] | null = null;
  private model: string;
  private finishReason: FinishReason | undefined;
  /** Tool calls by the index the provider gave them; a Map, so a stray index makes no holes. */
  private readonly calls = new Map<number, { id: string; name: string; arguments: string }>();

  constructor(
    requested: string,
    private readonly onDelta: (delta: StreamDelta) => void,
  ) {
    this.model = requested;
  }

  get toolCallText(): string {
    return toolCallTextOf(this.calls.values());
  }

  event(data: string): boolean {
    if (data.trim() === '[DONE]') return true;
    const chunk = eventJson(data);
    if (!chunk) throw badResponse('a stream event is not JSON');
    if (chunk.error) throw badResponse(`the provider sent an error: ${providerMessage(chunk, '')}`);
    if (typeof chunk.model === 'string') this.model = chunk.model;
    const choice = (
      chunk.choices as { delta?: Record<string, unknown>; finish_reason?: unknown }[] | undefined
    )?.[0];
    const finish = finishOf(choice?.finish_reason);
    this.finishReason = finish ?? this.finishReason;
    // The whole call's usage: OpenAI's own chunk (no choices), or one on the last choice (as some
    // compatible servers send it). A running count on other chunks is not the whole call's.
    if (!choice || finish) this.readUsage(chunk.usage as ChatCompletion['usage'] | undefined);
    const delta = choice?.delta;
    if (!delta) return false;
    const piece: StreamDelta = {};
    if (typeof delta.content === 'string' && delta.content) {
      this.content += delta.content;
      piece.content = delta.content;
    }
    const calls = this.readCalls(delta.tool_calls as ChunkToolCall[] | undefined);
    if (calls.length) piece.toolCalls = calls;
    if (piece.content || piece.toolCalls) this.onDelta(piece);
    return false;
  }

  result(): CompletionResult {
    if (!this.usage) throw badResponse('the stream ended without token usage');
    const toolCalls = [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, c]) => ({
        id: c.id,
        type: 'function' as const,
        function: { name: c.name, arguments: c.arguments },
      }));
    return {
      output: { role: 'assistant', content: this.content, ...(toolCalls.length ? { toolCalls } : {}) },
      usage: this.usage,
      model: this.model,
      ...(this.finishReason ? { finishReason: this.finishReason } : {}),
    };
  }

  private readUsage(usage: ChatCompletion['usage'] | undefined): void {
    const { prompt_tokens: input, completion_tokens: output } = usage ?? {};
    if (isCount(input) && isCount(output)) this.usage = { inputTokens: input, outputTokens: output };
  }

  private readCalls(raw: ChunkToolCall[] | undefined): NonNullable<StreamDelta['toolCalls']> {
    if (!Array.isArray(raw)) return [];
    return raw.flatMap((c) => {
      const index = isCount(c.index) ? c.index : 0;
      const call = this.calls.get(index) ?? { id: '', name: '', arguments: '' };
      this.calls.set(index, call);
      const piece: NonNullable<StreamDelta['toolCalls']>[number] = { index };
      // Taken once, the first given that is not empty, and handed on only then: a provider that
      // repeats or blanks it later would have one stored and another streamed (QA).
      if (isName(c.id) && call.id === '') piece.id = call.id = c.id;
      if (isName(c.function?.name) && call.name === '') piece.name = call.name = c.function.name;
      if (typeof c.function?.arguments === 'string') {
        call.arguments += c.function.arguments;
        piece.arguments = c.function.arguments;
      }
      return [piece];
    });
  }
}
