import type {
  ChatMessage,
  CompletionRequest,
  CompletionResult,
  FinishReason,
  ProviderClient,
  StreamDelta,
  ToolCall,
} from '../../domain/providers';
import { callProvider, isCount, joinUrl } from './call-provider';
import type { HttpTransport } from './http-transport';
import { badResponse, providerMessage } from './provider-errors';
import { eventJson } from './sse-events';
import { streamProvider, toolCallTextOf, type StreamParser } from './stream-provider';

const ANTHROPIC_BASE = 'https://api.anthropic.com';
const API_VERSION = '2023-06-01';

type Block = { type?: unknown; text?: unknown; id?: unknown; name?: unknown; input?: unknown };

interface MessagesResponse {
  model?: unknown;
  content?: Block[];
  stop_reason?: unknown;
  usage?: { input_tokens?: unknown; output_tokens?: unknown };
}

const STOP_REASONS: Record<string, FinishReason> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
  tool_use: 'tool_calls',
};

/** A tool_use input must be an object; arguments that are not one (or not JSON) become `{}`. */
const parseArguments = (text: string): unknown => {
  try {
    const input: unknown = JSON.parse(text || '{}');
    return input && typeof input === 'object' && !Array.isArray(input) ? input : {};
  } catch {
    return {};
  }
};

interface AnthropicTurn {
  role: 'user' | 'assistant';
  content: string | Record<string, unknown>[];
}

/** A Chat Completions turn as Anthropic content: tool calls as tool_use, tool results as tool_result. */
function toAnthropic(m: ChatMessage): AnthropicTurn {
  if (m.role === 'tool')
    return {
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: m.toolCallId ?? '', content: m.content }],
    };
  if (m.role === 'assistant' && m.toolCalls?.length)
    return {
      role: 'assistant',
      content: [
        ...(m.content ? [{ type: 'text', text: m.content }] : []),
        ...m.toolCalls.map((c) => ({
          type: 'tool_use',
          id: c.id,
          name: c.function.name,
          input: parseArguments(c.function.arguments),
        })),
      ],
    };
  return { role: m.role === 'assistant' ? 'assistant' : 'user', content: m.content };
}

/** Results of parallel tool calls travel together, in one user turn, as Anthropic asks. */
function joinToolResults(turns: AnthropicTurn[], m: ChatMessage): AnthropicTurn[] {
  const turn = toAnthropic(m);
  const last = turns.at(-1);
  if (
    m.role === 'tool' &&
    last?.role === 'user' &&
    Array.isArray(last.content) &&
    Array.isArray(turn.content)
  )
    last.content.push(...turn.content);
  else turns.push(turn);
  return turns;
}

type FunctionTool = { function?: { name?: string; description?: string; parameters?: unknown } };

const toolsOf = (tools: unknown[]) =>
  (tools as FunctionTool[]).map((t) => ({
    name: t.function?.name ?? '',
    ...(t.function?.description ? { description: t.function.description } : {}),
    input_schema: t.function?.parameters ?? { type: 'object', properties: {} },
  }));

function toolChoiceOf(choice: unknown): unknown {
  if (choice === 'auto') return { type: 'auto' };
  if (choice === 'required') return { type: 'any' };
  if (choice === 'none') return { type: 'none' };
  const name = (choice as { function?: { name?: string } } | undefined)?.function?.name;
  return name ? { type: 'tool', name } : undefined;
}

/**
 * Anthropic's Messages API: system prompts travel in their own field, not as messages; function
 * tools, tool calls and tool results are mapped to and from its tool_use blocks.
 */
export class AnthropicMessages implements ProviderClient {
  constructor(private readonly transport: HttpTransport) {}

  async complete(req: CompletionRequest): Promise<CompletionResult> {
    const json = (await callProvider(
      this.transport,
      req,
      url(req),
      headers(req),
      body(req),
    )) as MessagesResponse;
    return toResult(json, req.model);
  }

  stream(req: CompletionRequest, onDelta: (delta: StreamDelta) => void): Promise<CompletionResult> {
    return streamProvider(
      this.transport,
      req,
      url(req),
      headers(req),
      { ...body(req), stream: true },
      {
        events: (pieces) => new EventParser(req.model, pieces),
        whole: (json) => toResult(json as MessagesResponse, req.model),
      },
      onDelta,
    );
  }
}

const url = (req: CompletionRequest) => joinUrl(req.baseUrl ?? ANTHROPIC_BASE, '/v1/messages');
const headers = (req: CompletionRequest) => ({ 'x-api-key': req.secret, 'anthropic-version': API_VERSION });

function body(req: CompletionRequest) {
  const system = req.messages.filter((m) => m.role === 'system').map((m) => m.content);
  const choice = req.toolChoice === undefined ? undefined : toolChoiceOf(req.toolChoice);
  return {
    model: req.model,
    max_tokens: req.maxTokens,
    messages: req.messages.filter((m) => m.role !== 'system').reduce(joinToolResults, [] as AnthropicTurn[]),
    ...(system.length ? { system: system.join('\n\n') } : {}),
    ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
    ...(req.tools?.length ? { tools: toolsOf(req.tools) } : {}),
    ...(choice ? { tool_choice: choice } : {}),
  };
}

const toolCallOf = (b: Block): ToolCall => ({
  id: String(b.id ?? ''),
  type: 'function',
  function: { name: String(b.name ?? ''), arguments: JSON.stringify(b.input ?? {}) },
});

function toResult(json: MessagesResponse, requested: string): CompletionResult {
  if (!Array.isArray(json.content)) throw badResponse('no content');
  const text = json.content
    .filter((block) => block.type === 'text' && typeof block.text === 'string')
    .map((block) => block.text as string)
    .join('');
  const toolCalls = json.content.filter((b) => b.type === 'tool_use').map(toolCallOf);
  const { input_tokens: input, output_tokens: output } = json.usage ?? {};
  if (!isCount(input) || !isCount(output)) throw badResponse('no token usage');
  const finishReason = typeof json.stop_reason === 'string' ? STOP_REASONS[json.stop_reason] : undefined;
  return {
    output: { role: 'assistant', content: text, ...(toolCalls.length ? { toolCalls } : {}) },
    usage: { inputTokens: input, outputTokens: output },
    model: typeof json.model === 'string' ? json.model : requested,
    ...(finishReason ? { finishReason } : {}),
  };
}

/**
 * Messages streaming: message_start (input usage), content_block_start / _delta (text_delta,
 * input_json_delta of a tool_use), message_delta (output usage, stop_reason), message_stop.
 */
class EventParser implements StreamParser {
  content = '';
  usage: CompletionResult['usage'] | null = null;
  private input: number | null = null;
  private finishReason: FinishReason | undefined;
  private readonly calls = new Map<number, { index: number; id: string; name: string; arguments: string }>();

  constructor(
    private model: string,
    private readonly onDelta: (delta: StreamDelta) => void,
  ) {}

  get toolCallText(): string {
    return toolCallTextOf(this.calls.values());
  }

  event(data: string): boolean {
    const e = eventJson(data);
    if (!e) throw badResponse('a stream event is not JSON');
    const index = typeof e.index === 'number' ? e.index : 0;
    switch (e.type) {
      case 'message_start':
        return this.start(e.message as MessagesResponse | undefined);
      case 'content_block_start':
        return this.blockStart(index, e.content_block as Block | undefined);
      case 'content_block_delta':
        return this.blockDelta(index, e.delta as { type?: unknown; text?: unknown; partial_json?: unknown });
      case 'content_block_stop':
        return this.blockStop(index);
      case 'message_delta':
        return this.messageDelta(e);
      case 'message_stop':
        return true;
      case 'error':
        throw badResponse(`the provider sent an error: ${providerMessage(e, '')}`);
      default:
        return false;
    }
  }

  result(): CompletionResult {
    if (this.usage === null) throw badResponse('the stream ended without token usage');
    const toolCalls = [...this.calls.values()].map((c) => ({
      id: c.id,
      type: 'function' as const,
      function: { name: c.name, arguments: c.arguments || '{}' },
    }));
    return {
      output: { role: 'assistant', content: this.content, ...(toolCalls.length ? { toolCalls } : {}) },
      usage: this.usage,
      model: this.model,
      ...(this.finishReason ? { finishReason: this.finishReason } : {}),
    };
  }

  private start(message: MessagesResponse | undefined): boolean {
    if (typeof message?.model === 'string') this.model = message.model;
    const input = message?.usage?.input_tokens;
    if (isCount(input)) this.input = input;
    return false;
  }

  private blockStart(index: number, block: Block | undefined): boolean {
    if (block?.type !== 'tool_use') return false;
    const call = {
      index: this.calls.size,
      id: String(block.id ?? ''),
      name: String(block.name ?? ''),
      arguments: '',
    };
    this.calls.set(index, call);
    this.onDelta({ toolCalls: [{ index: call.index, id: call.id, name: call.name }] });
    return false;
  }

  private blockDelta(
    index: number,
    delta: { type?: unknown; text?: unknown; partial_json?: unknown } | undefined,
  ) {
    if (delta?.type === 'text_delta' && typeof delta.text === 'string' && delta.text) {
      this.content += delta.text;
      this.onDelta({ content: delta.text });
    }
    const call = this.calls.get(index);
    if (delta?.type === 'input_json_delta' && call && typeof delta.partial_json === 'string') {
      call.arguments += delta.partial_json;
      this.onDelta({ toolCalls: [{ index: call.index, arguments: delta.partial_json }] });
    }
    return false;
  }

  /** A tool called without arguments sends no input_json_delta; its pieces still add up to `{}`. */
  private blockStop(index: number): boolean {
    const call = this.calls.get(index);
    if (call && !call.arguments) {
      call.arguments = '{}';
      this.onDelta({ toolCalls: [{ index: call.index, arguments: '{}' }] });
    }
    return false;
  }

  private messageDelta(e: Record<string, unknown>): boolean {
    const reason = (e.delta as { stop_reason?: unknown } | undefined)?.stop_reason;
    if (typeof reason === 'string') this.finishReason = STOP_REASONS[reason];
    const usage = e.usage as { input_tokens?: unknown; output_tokens?: unknown } | undefined;
    if (isCount(usage?.input_tokens)) this.input = usage.input_tokens;
    // Only this event's count covers the whole answer: message_start's is a placeholder, so a
    // stream cut before it reports no usage rather than too little.
    if (isCount(usage?.output_tokens) && this.input !== null)
      this.usage = { inputTokens: this.input, outputTokens: usage.output_tokens };
    return false;
  }
}
