import { setTimeout as sleep } from 'node:timers/promises';
import {
  ProviderError,
  type CompletionRequest,
  type CompletionResult,
  type ProviderClient,
  type StreamDelta,
} from '../../domain/providers';
import { inputTokenBound } from '../../domain/pricing/cost';
import { abortedError, timeoutError } from './provider-errors';

const bytes = (text: string) => Buffer.byteLength(text, 'utf8');

/** The tool a request asks the mock to call: `call <name>` in the last user message, for an offered tool. */
function toolAsked(req: CompletionRequest): string | null {
  const last = req.messages.at(-1);
  if (!req.tools?.length || last?.role !== 'user') return null;
  const offered = new Set(req.tools.map((t) => (t as { function?: { name?: unknown } }).function?.name));
  for (const [, name] of last.content.matchAll(/\bcall (\w[\w-]*)/g))
    if (offered.has(name)) return name ?? null;
  return null;
}

function replyOf(req: CompletionRequest): string {
  const last = req.messages.at(-1);
  if (last?.role === 'tool') return `mock reply to tool result: ${[...last.content].slice(0, 200).join('')}`;
  const lastUser = [...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  return `mock reply to: ${[...lastUser].slice(0, 200).join('')}`;
}

/** The mock's whole answer to a request (see the class comment). */
function answer(req: CompletionRequest): CompletionResult {
  const tool = toolAsked(req);
  const content = tool ? '' : replyOf(req);
  const worst = req.model === 'mock-worst-case';
  const input = req.messages.reduce((sum, m) => sum + bytes(m.content), 0);
  return {
    output: {
      role: 'assistant',
      content,
      ...(tool
        ? { toolCalls: [{ id: 'call_mock_1', type: 'function', function: { name: tool, arguments: '{}' } }] }
        : {}),
    },
    usage: {
      inputTokens: worst
        ? inputTokenBound(req.messages, req.tools)
        : Math.ceil(input / 4) + 3 * req.messages.length + 3,
      outputTokens: worst
        ? req.maxTokens
        : Math.min(req.maxTokens, Math.max(1, Math.ceil(bytes(content || (tool ?? '')) / 4))),
    },
    model: req.model,
    finishReason: tool ? 'tool_calls' : 'stop',
  };
}

/**
 * A streamed call that stopped after it started: the caller hung up (`provider_aborted`) or the
 * deadline passed (`provider_timeout`). The provider may bill it; what was sent is kept.
 */
function cutOff(sent: string, timedOut: boolean, req: CompletionRequest): ProviderError {
  const base = timedOut
    ? timeoutError(req.timeoutMs)
    : new ProviderError('final', 'provider_aborted', 'the client hung up; the call was stopped');
  // The mock sends its tool calls whole, after the text: a cut-off one never carries any.
  return new ProviderError(base.kind, base.code, base.message, null, null, 'unknown', {
    content: sent,
    toolCallText: '',
    usage: null,
  });
}

/** Waits between pieces, under the whole call's deadline and the caller's abort. */
async function pause(ms: number, req: CompletionRequest, deadline: AbortSignal, sent: string) {
  try {
    await sleep(ms, undefined, { signal: req.signal ? AbortSignal.any([deadline, req.signal]) : deadline });
  } catch {
    throw cutOff(sent, deadline.aborted, req);
  }
}

/**
 * The `mock` provider: deterministic, no network, for development and for testing the agents
 * that use this service. Documented in docs/mock-provider.md; in short:
 * - reply: `mock reply to: <the last user message, first 200 characters>`; after a tool turn,
 *   `mock reply to tool result: <its content>`; with `tools` offered and `call <name>` in the last
 *   user message, a call to that tool with arguments `{}` (finish_reason `tool_calls`);
 * - streamed, a word a piece; `mock-stream-<ms>` waits that long between pieces;
 * - input tokens: ceil(UTF-8 bytes of all contents / 4) + 3 per message + 3 (never above the
 *   pricing bound); output tokens: ceil(UTF-8 bytes of the reply / 4), at least 1, at most max_tokens;
 * - model names drive failures: `mock-error-<status>` answers that HTTP status,
 *   `mock-slow-<ms>` answers after that long (honouring the timeout), and `mock-worst-case`
 *   reports exactly the worst case the pricing layer reserves for (the input bound and max_tokens).
 */
export class MockProvider implements ProviderClient {
  async complete(req: CompletionRequest): Promise<CompletionResult> {
    await this.simulate(req);
    return answer(req);
  }

  /** The same answer in pieces (a word each); `mock-stream-<ms>` waits that long between pieces. */
  async stream(req: CompletionRequest, onDelta: (delta: StreamDelta) => void): Promise<CompletionResult> {
    const deadline = AbortSignal.timeout(req.timeoutMs);
    await this.simulate(req).catch((err: unknown) => {
      // Sent and then stopped before the first piece: as a real stream cut off there.
      if (err instanceof ProviderError && err.delivery === 'unknown')
        throw cutOff('', err.code === 'provider_timeout', req);
      throw err;
    });
    const result = answer(req);
    const gap = Number(/^mock-stream-(\d{1,5})$/.exec(req.model)?.[1] ?? 0);
    let sent = '';
    for (const piece of result.output.content.match(/\S+\s*|\s+/g) ?? []) {
      if (gap) await pause(gap, req, deadline, sent);
      if (req.signal?.aborted) throw cutOff(sent, false, req);
      sent += piece;
      onDelta({ content: piece });
    }
    const calls = result.output.toolCalls ?? [];
    if (calls.length)
      onDelta({
        toolCalls: calls.map((c, index) => ({
          index,
          id: c.id,
          name: c.function.name,
          arguments: c.function.arguments,
        })),
      });
    return result;
  }

  private async simulate(req: CompletionRequest): Promise<void> {
    const error = /^mock-error-(\d{3})$/.exec(req.model);
    if (error) {
      const status = Number(error[1]);
      const retryable = status === 429 || status === 408 || status >= 500;
      const code =
        status === 429
          ? 'provider_rate_limited'
          : retryable
            ? 'provider_unavailable'
            : status === 401 || status === 403
              ? 'provider_auth_failed'
              : 'provider_rejected';
      throw new ProviderError(
        retryable ? 'retryable' : 'final',
        code,
        `mock provider answered ${status}`,
        status,
      );
    }
    const slow = /^mock-slow-(\d{1,6})$/.exec(req.model);
    if (!slow) return;
    const ms = Number(slow[1]);
    const deadline = AbortSignal.timeout(req.timeoutMs);
    const signal = req.signal ? AbortSignal.any([deadline, req.signal]) : deadline;
    try {
      await sleep(ms, undefined, { signal });
    } catch {
      if (deadline.aborted) throw timeoutError(req.timeoutMs);
      throw abortedError();
    }
  }
}
