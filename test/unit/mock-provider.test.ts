import fc from 'fast-check';
import { inputTokenBound } from '../../domain/pricing/cost';
import { ProviderError, type CompletionRequest } from '../../domain/providers';
import { MockProvider } from '../../infra/providers/mock-provider';

const mock = new MockProvider();
const request = (over: Partial<CompletionRequest> = {}): CompletionRequest => ({
  provider: 'mock',
  baseUrl: null,
  secret: 'unused',
  model: 'mock-1',
  messages: [
    { role: 'system', content: 'be brief' },
    { role: 'user', content: 'hello world' },
  ],
  maxTokens: 100,
  timeoutMs: 1_000,
  ...over,
});

describe('mock provider', () => {
  it('answers deterministically with the documented reply and token counts', async () => {
    const result = await mock.complete(request());
    // input: ceil((8 + 11) / 4) + 3 * 2 + 3 = 14; reply "mock reply to: hello world" is 26 bytes -> 7.
    expect(result).toEqual({
      output: { role: 'assistant', content: 'mock reply to: hello world' },
      usage: { inputTokens: 14, outputTokens: 7 },
      model: 'mock-1',
    });
    expect(await mock.complete(request())).toEqual(result);
  });

  it('never reports more than the pricing bound or max_tokens', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            role: fc.constantFrom('user' as const, 'system' as const),
            content: fc.string({ maxLength: 300 }),
          }),
          { minLength: 1, maxLength: 10 },
        ),
        fc.integer({ min: 1, max: 50 }),
        async (messages, maxTokens) => {
          const { usage } = await mock.complete(request({ messages, maxTokens }));
          expect(usage.inputTokens).toBeLessThanOrEqual(inputTokenBound(messages));
          expect(usage.outputTokens).toBeLessThanOrEqual(maxTokens);
        },
      ),
    );
  });

  it('reports exactly the worst case for mock-worst-case', async () => {
    const req = request({ model: 'mock-worst-case', maxTokens: 33 });
    expect((await mock.complete(req)).usage).toEqual({
      inputTokens: inputTokenBound(req.messages),
      outputTokens: 33,
    });
  });

  it.each([
    ['mock-error-500', 'retryable', 'provider_unavailable'],
    ['mock-error-429', 'retryable', 'provider_rate_limited'],
    ['mock-error-400', 'final', 'provider_rejected'],
  ])('%s fails as %s', async (model, kind, code) => {
    await expect(mock.complete(request({ model }))).rejects.toMatchObject({ kind, code });
  });

  it('mock-slow-<ms> answers late, or times out as retryable provider_timeout', async () => {
    expect((await mock.complete(request({ model: 'mock-slow-20' }))).output.content).toContain('hello');
    const err = await mock
      .complete(request({ model: 'mock-slow-5000', timeoutMs: 50 }))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderError);
    expect(err).toMatchObject({ kind: 'retryable', code: 'provider_timeout' });
  });
});
