import { setTimeout as sleep } from 'node:timers/promises';
import {
  ProviderError,
  type CompletionRequest,
  type CompletionResult,
  type ProviderClient,
} from '../../domain/providers';
import { inputTokenBound } from '../../domain/pricing/cost';
import { abortedError, timeoutError } from './provider-errors';

const bytes = (text: string) => Buffer.byteLength(text, 'utf8');

/**
 * The `mock` provider: deterministic, no network, for development and for testing the agents
 * that use this service. Documented in docs/mock-provider.md; in short:
 * - reply: `mock reply to: <the last user message, first 200 characters>`;
 * - input tokens: ceil(UTF-8 bytes of all contents / 4) + 3 per message + 3 (never above the
 *   pricing bound); output tokens: ceil(UTF-8 bytes of the reply / 4), at least 1, at most max_tokens;
 * - model names drive failures: `mock-error-<status>` answers that HTTP status,
 *   `mock-slow-<ms>` answers after that long (honouring the timeout), and `mock-worst-case`
 *   reports exactly the worst case the pricing layer reserves for (the input bound and max_tokens).
 */
export class MockProvider implements ProviderClient {
  async complete(req: CompletionRequest): Promise<CompletionResult> {
    await this.simulate(req);
    const lastUser = [...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
    const content = `mock reply to: ${[...lastUser].slice(0, 200).join('')}`;
    const worst = req.model === 'mock-worst-case';
    const input = req.messages.reduce((sum, m) => sum + bytes(m.content), 0);
    return {
      output: { role: 'assistant', content },
      usage: {
        inputTokens: worst
          ? inputTokenBound(req.messages)
          : Math.ceil(input / 4) + 3 * req.messages.length + 3,
        outputTokens: worst
          ? req.maxTokens
          : Math.min(req.maxTokens, Math.max(1, Math.ceil(bytes(content) / 4))),
      },
      model: req.model,
    };
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
