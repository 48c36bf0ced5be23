import {
  ProviderError,
  type CompletionRequest,
  type CompletionResult,
  type ProviderClient,
} from '../../domain/providers';
import { callProvider, isCount, joinUrl } from './call-provider';
import type { HttpTransport } from './http-transport';
import { badResponse } from './provider-errors';

const OPENAI_BASE = 'https://api.openai.com/v1';

interface ChatCompletion {
  model?: unknown;
  choices?: { message?: { content?: unknown } }[];
  usage?: { prompt_tokens?: unknown; completion_tokens?: unknown };
}

/**
 * Chat Completions, for `openai` and for `openai_compatible` servers (vLLM, Ollama, OpenRouter).
 * OpenAI's own API wants `max_completion_tokens` (its reasoning models refuse `max_tokens`);
 * compatible servers mostly know only `max_tokens`, so each flavour sends the field it expects.
 */
export class OpenAiChat implements ProviderClient {
  constructor(
    private readonly transport: HttpTransport,
    private readonly flavour: 'openai' | 'openai_compatible',
  ) {}

  async complete(req: CompletionRequest): Promise<CompletionResult> {
    const base = req.baseUrl ?? (this.flavour === 'openai' ? OPENAI_BASE : null);
    if (!base)
      throw new ProviderError(
        'final',
        'provider_misconfigured',
        'an openai_compatible credential needs a base_url',
      );
    const limit = this.flavour === 'openai' ? 'max_completion_tokens' : 'max_tokens';
    const body = {
      model: req.model,
      messages: req.messages,
      [limit]: req.maxTokens,
      ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
    };
    const json = (await callProvider(
      this.transport,
      req,
      joinUrl(base, '/chat/completions'),
      {
        authorization: `Bearer ${req.secret}`,
      },
      body,
    )) as ChatCompletion;
    return toResult(json, req.model);
  }
}

function toResult(json: ChatCompletion, requested: string): CompletionResult {
  const content = json.choices?.[0]?.message?.content;
  const { prompt_tokens: input, completion_tokens: output } = json.usage ?? {};
  if (!Array.isArray(json.choices) || json.choices.length === 0) throw badResponse('no choices');
  if (content !== null && content !== undefined && typeof content !== 'string')
    throw badResponse('content is not text');
  if (!isCount(input) || !isCount(output)) throw badResponse('no token usage');
  return {
    output: { role: 'assistant', content: content ?? '' },
    usage: { inputTokens: input, outputTokens: output },
    model: typeof json.model === 'string' ? json.model : requested,
  };
}
