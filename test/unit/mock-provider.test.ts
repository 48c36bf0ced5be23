import fc from 'fast-check';
import { inputTokenBound } from '../../domain/pricing/cost';
import { ProviderError, type CompletionRequest, type StreamDelta } from '../../domain/providers';
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
      finishReason: 'stop',
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

const lookup = { type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } };
const asking = (content: string, over: Partial<CompletionRequest> = {}) =>
  request({ tools: [lookup], messages: [{ role: 'user', content }], ...over });

async function streamed(req: CompletionRequest, onPiece: (d: StreamDelta) => void = () => undefined) {
  const pieces: StreamDelta[] = [];
  const outcome = await mock
    .stream(req, (d) => {
      pieces.push(d);
      onPiece(d);
    })
    .then(
      (result) => ({ result, error: null }),
      (error: unknown) => ({ result: null, error: error as ProviderError }),
    );
  return { pieces, ...outcome };
}

describe('mock provider, tool calls', () => {
  it('calls an offered tool named after `call` in the last user message, with arguments {}', async () => {
    const result = await mock.complete(asking('please call lookup now'));
    expect(result).toEqual({
      output: {
        role: 'assistant',
        content: '',
        toolCalls: [{ id: 'call_mock_1', type: 'function', function: { name: 'lookup', arguments: '{}' } }],
      },
      // input: ceil(22 / 4) + 3 + 3 = 12; output: ceil(bytes of "lookup" / 4) = 2.
      usage: { inputTokens: 12, outputTokens: 2 },
      model: 'mock-1',
      finishReason: 'tool_calls',
    });
  });

  it.each([
    ['a tool that is not offered', asking('call search')],
    ['no tools offered', asking('call lookup', { tools: [] })],
    ['`call` inside another word', asking('recall lookup')],
    [
      'a last message that is not the user’s',
      asking('', {
        messages: [
          { role: 'user', content: 'call lookup' },
          { role: 'assistant', content: 'ok' },
        ],
      }),
    ],
  ])('answers text for %s', async (_case, req) => {
    const result = await mock.complete(req);
    expect(result.output).not.toHaveProperty('toolCalls');
    expect(result.finishReason).toBe('stop');
  });

  it('takes the first offered name after a `call`', async () => {
    const result = await mock.complete(asking('call search, or else call lookup'));
    expect(result.output.toolCalls?.[0]?.function.name).toBe('lookup');
  });

  it('answers a tool turn as text about its result, so an agent loop ends', async () => {
    const result = await mock.complete(
      request({
        tools: [lookup],
        messages: [
          { role: 'user', content: 'call lookup' },
          {
            role: 'assistant',
            content: '',
            toolCalls: [
              { id: 'call_mock_1', type: 'function', function: { name: 'lookup', arguments: '{}' } },
            ],
          },
          { role: 'tool', content: `found ${'x'.repeat(300)}`, toolCallId: 'call_mock_1' },
        ],
      }),
    );
    expect(result.output).toEqual({
      role: 'assistant',
      content: `mock reply to tool result: found ${'x'.repeat(194)}`,
    });
    expect(result.finishReason).toBe('stop');
  });
});

describe('mock provider, streamed', () => {
  it('sends the reply a word a piece, in order, adding up to what complete answers', async () => {
    const req = request({ messages: [{ role: 'user', content: 'three small words' }] });
    const { pieces, result } = await streamed(req);
    expect(pieces).toEqual([
      { content: 'mock ' },
      { content: 'reply ' },
      { content: 'to: ' },
      { content: 'three ' },
      { content: 'small ' },
      { content: 'words' },
    ]);
    expect(result).toEqual(await mock.complete(req));
  });

  it('streams a tool call as one piece, and answers as complete does', async () => {
    const req = asking('call lookup');
    const { pieces, result } = await streamed(req);
    expect(pieces).toEqual([
      { toolCalls: [{ index: 0, id: 'call_mock_1', name: 'lookup', arguments: '{}' }] },
    ]);
    expect(result).toEqual(await mock.complete(req));
  });

  it('mock-stream-<ms> waits between pieces', async () => {
    const started = Date.now();
    const { pieces } = await streamed(request({ model: 'mock-stream-30' }));
    expect(pieces.length).toBe(5); // mock / reply / to: / hello / world
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
  });

  it('a hang-up mid-stream fails as provider_aborted, final, unknown, with the text sent so far', async () => {
    const hangUp = new AbortController();
    const { pieces, error } = await streamed(
      request({ model: 'mock-stream-20', signal: hangUp.signal }),
      (d) => d.content === 'reply ' && hangUp.abort(),
    );
    expect(pieces).toEqual([{ content: 'mock ' }, { content: 'reply ' }]);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({
      kind: 'final',
      code: 'provider_aborted',
      delivery: 'unknown',
      streamed: { content: 'mock reply ', usage: null },
    });
  });

  it('the call timeout covers the whole stream: provider_timeout, unknown, the text so far', async () => {
    const { pieces, error } = await streamed(request({ model: 'mock-stream-40', timeoutMs: 100 }));
    expect(pieces.length).toBeGreaterThan(0);
    expect(pieces.length).toBeLessThan(5);
    expect(error).toMatchObject({
      kind: 'retryable',
      code: 'provider_timeout',
      delivery: 'unknown',
      streamed: { content: pieces.map((p) => p.content).join(''), usage: null },
    });
  });

  it('fails before the first piece as complete does: mock-error-<code> answered, mock-slow past the timeout unknown', async () => {
    const refused = await streamed(request({ model: 'mock-error-503' }));
    expect(refused.pieces).toEqual([]);
    expect(refused.error).toMatchObject({
      kind: 'retryable',
      code: 'provider_unavailable',
      status: 503,
      delivery: 'answered',
      streamed: null,
    });
    const late = await streamed(request({ model: 'mock-slow-5000', timeoutMs: 50 }));
    expect(late.error).toMatchObject({
      code: 'provider_timeout',
      delivery: 'unknown',
      streamed: { content: '', usage: null },
    });
  });
});
