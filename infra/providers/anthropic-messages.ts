import type { CompletionRequest, CompletionResult, ProviderClient } from '../../domain/providers';
import { callProvider, isCount, joinUrl } from './call-provider';
import type { HttpTransport } from './http-transport';
import { badResponse } from './provider-errors';

const ANTHROPIC_BASE = 'https://api.anthropic.com';
const API_VERSION = '2023-06-01';

interface MessagesResponse {
  model?: unknown;
  content?: { type?: unknown; text?: unknown }[];
  usage?: { input_tokens?: unknown; output_tokens?: unknown };
}

/** Anthropic's Messages API: system prompts travel in their own field, not as messages. */
export class AnthropicMessages implements ProviderClient {
  constructor(private readonly transport: HttpTransport) {}

  async complete(req: CompletionRequest): Promise<CompletionResult> {
    const system = req.messages.filter((m) => m.role === 'system').map((m) => m.content);
    const body = {
      model: req.model,
      max_tokens: req.maxTokens,
      messages: req.messages
        .filter((m) => m.role !== 'system')
        .map((m) => ({ role: m.role === 'assistant' ? 'assistant' : 'user', content: m.content })),
      ...(system.length ? { system: system.join('\n\n') } : {}),
      ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
    };
    const headers = { 'x-api-key': req.secret, 'anthropic-version': API_VERSION };
    const url = joinUrl(req.baseUrl ?? ANTHROPIC_BASE, '/v1/messages');
    const json = (await callProvider(this.transport, req, url, headers, body)) as MessagesResponse;
    return toResult(json, req.model);
  }
}

function toResult(json: MessagesResponse, requested: string): CompletionResult {
  if (!Array.isArray(json.content)) throw badResponse('no content');
  const text = json.content
    .filter((block) => block.type === 'text' && typeof block.text === 'string')
    .map((block) => block.text as string)
    .join('');
  const { input_tokens: input, output_tokens: output } = json.usage ?? {};
  if (!isCount(input) || !isCount(output)) throw badResponse('no token usage');
  return {
    output: { role: 'assistant', content: text },
    usage: { inputTokens: input, outputTokens: output },
    model: typeof json.model === 'string' ? json.model : requested,
  };
}
