import { ProviderError, type CompletionRequest, type StreamDelta } from '../../../domain/providers';
import { ProviderRouter } from '../../../infra/providers/provider-router';
import { StubProvider } from '../../support/stub-provider';
import { collect, sse, sseThenDrop, textOf } from './stream-harness';

/** Streamed calls through the adapters against a local stub speaking each provider's event stream. */
const SECRET = 'sk-proj-STREAMSECRETSECRET9876';
let stub: StubProvider;
const router = new ProviderRouter({ allowPrivateHosts: true });

beforeAll(async () => (stub = await new StubProvider().start()));
afterAll(async () => {
  await stub.stop();
  await router.close();
});
beforeEach(() => stub.requests.splice(0));

const request = (over: Partial<CompletionRequest> = {}): CompletionRequest => ({
  provider: 'openai_compatible',
  baseUrl: `${stub.url}/v1`,
  secret: SECRET,
  model: 'llama-3-8b',
  messages: [{ role: 'user', content: 'hello' }],
  maxTokens: 50,
  timeoutMs: 2_000,
  ...over,
});

/** A whole (not streamed) chat completion, as a gateway that ignores `stream` answers. */
const COMPLETION = {
  choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 10, completion_tokens: 5 },
};

describe('openai and openai_compatible, streamed', () => {
  it('hands on the pieces in order and resolves with the assembled answer and the usage chunk', async () => {
    stub.handler = (_req, res) =>
      sse(res, [
        {
          model: 'llama-3-8b-instruct',
          choices: [{ index: 0, delta: { role: 'assistant', content: 'hi' } }],
        },
        { choices: [{ index: 0, delta: { content: ' there' } }] },
        {
          choices: [
            {
              index: 0,
              delta: {
                tool_calls: [
                  { index: 0, id: 'call_9', type: 'function', function: { name: 'f', arguments: '{"a"' } },
                ],
              },
            },
          ],
        },
        { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: ':1}' } }] } }] },
        { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
        { choices: [], usage: { prompt_tokens: 9, completion_tokens: 4 } },
        '[DONE]',
      ]);
    const { pieces, result } = await collect(router, request());
    expect(pieces.map((p) => p.content ?? '').join('')).toBe('hi there');
    expect(pieces.filter((p) => p.toolCalls).length).toBe(2);
    expect(result).toEqual({
      output: {
        role: 'assistant',
        content: 'hi there',
        toolCalls: [{ id: 'call_9', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
      },
      usage: { inputTokens: 9, outputTokens: 4 },
      model: 'llama-3-8b-instruct',
      finishReason: 'tool_calls',
    });
    expect(stub.requests[0]?.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it('classifies a 500 before the stream like a plain call, without the secret', async () => {
    stub.answer(500, { error: { message: `upstream broke for ${SECRET}` } });
    const { error } = await collect(router, request());
    expect(error).toMatchObject({
      kind: 'retryable',
      code: 'provider_unavailable',
      status: 500,
      delivery: 'answered',
    });
    expect(error?.message).not.toContain(SECRET);
  });

  it('a stream that breaks after it started: delivery unknown, with the text that had arrived', async () => {
    stub.handler = sseThenDrop([{ choices: [{ index: 0, delta: { content: 'partial ' } }] }], 50);
    const { pieces, error } = await collect(router, request());
    expect(pieces).toEqual([{ content: 'partial ' }]);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ delivery: 'unknown', streamed: { content: 'partial ', usage: null } });
  });

  it('a stream with no usage is unusable and its outcome unknown (the call may be billed)', async () => {
    stub.handler = (_req, res) => sse(res, [{ choices: [{ index: 0, delta: { content: 'x' } }] }, '[DONE]']);
    const { error } = await collect(router, request());
    expect(error).toMatchObject({
      code: 'provider_bad_response',
      delivery: 'unknown',
      streamed: { content: 'x' },
    });
  });

  it('takes a whole JSON completion (a gateway that ignores stream) as the answer, handed on as one piece', async () => {
    const toolCall = { id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } };
    const message = { role: 'assistant', content: `hi, ${SECRET}`, tool_calls: [toolCall] };
    const completion = { ...COMPLETION, choices: [{ index: 0, message, finish_reason: 'tool_calls' }] };
    stub.handler = (_req, res) =>
      res
        .writeHead(200, { 'content-type': 'application/json; charset=utf-8' })
        .end(JSON.stringify(completion));
    const { pieces, result, error } = await collect(router, request());
    expect(error).toBeNull();
    // The secret is scrubbed from the piece and the result alike, as from any answer.
    expect(textOf(pieces)).toBe('hi, [redacted]');
    expect(pieces.flatMap((p) => p.toolCalls ?? [])).toEqual([
      { index: 0, id: 'call_1', name: 'f', arguments: '{}' },
    ]);
    expect(result).toMatchObject({
      output: { content: 'hi, [redacted]', toolCalls: [toolCall] },
      usage: { inputTokens: 10, outputTokens: 5 },
      finishReason: 'tool_calls',
    });
  });

  it('tells events from a whole answer by the body, not by a media type a gateway got wrong', async () => {
    const events = [
      'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}',
      'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}',
      'data: [DONE]',
    ].join('\n\n');
    stub.handler = (_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(`${events}\n\n`);
    const labelledJson = await collect(router, request());
    expect(labelledJson.error).toBeNull();
    expect(labelledJson.result).toMatchObject({ output: { content: 'hi' }, usage: { outputTokens: 1 } });
    stub.handler = (_req, res) =>
      res.writeHead(200, { 'content-type': 'text/event-stream' }).end(`\n  ${JSON.stringify(COMPLETION)}`);
    const labelledEvents = await collect(router, request());
    expect(labelledEvents.error).toBeNull();
    expect(labelledEvents.pieces).toEqual([{ content: 'hi' }]);
  });

  it.each([
    ['a JSON completion without usage', 'application/json', JSON.stringify({ choices: COMPLETION.choices })],
    ['JSON that is not an object', 'application/json', '"hi"'],
    ['a body that is not JSON, sent as JSON', 'application/json', '<html></html>'],
    ['an HTML page', 'text/html', '<html><body>sign in to the proxy</body></html>'],
    ['an empty body', 'text/event-stream', ''],
  ])(
    'a whole 2xx answer that is neither events nor a completion (%s) is a bad response, final, not a lost connection',
    async (_what, type, body) => {
      stub.handler = (_req, res) => res.writeHead(200, { 'content-type': type }).end(body);
      const { pieces, error } = await collect(router, request());
      expect(pieces).toEqual([]);
      expect(error).toMatchObject({
        kind: 'final',
        code: 'provider_bad_response',
        delivery: 'unknown',
        streamed: { content: '', usage: null },
      });
    },
  );

  it('an abort through the signal stops the call: provider_aborted, delivery unknown', async () => {
    // A piece that cannot start a form of the secret, so it is not held back (answer-secrets.ts).
    stub.handler = (_req, res) => sse(res, [{ choices: [{ index: 0, delta: { content: 'x!' } }] }], false);
    const hangUp = new AbortController();
    const pieces: StreamDelta[] = [];
    const pending = router.stream(request({ signal: hangUp.signal }), (d) => {
      pieces.push(d);
      hangUp.abort();
    });
    await expect(pending).rejects.toMatchObject({
      code: 'provider_aborted',
      delivery: 'unknown',
      streamed: { content: 'x!' },
    });
  });

  it('the whole-call timeout applies to a stream', async () => {
    stub.handler = (_req, res) => sse(res, [{ choices: [{ index: 0, delta: { content: 'slow' } }] }], false);
    const { error } = await collect(router, request({ timeoutMs: 300 }));
    expect(error).toMatchObject({
      code: 'provider_timeout',
      delivery: 'unknown',
      streamed: { content: 'slow' },
    });
  });
});

/** A whole (not streamed) Messages answer. */
const WHOLE_MESSAGE = {
  model: 'claude-haiku-4-5',
  content: [{ type: 'text', text: 'Sunny.' }],
  stop_reason: 'end_turn',
  usage: { input_tokens: 30, output_tokens: 2 },
};

describe('anthropic, streamed', () => {
  it('maps Messages events (text, tool_use, usage, stop_reason) to pieces and the answer', async () => {
    stub.handler = (_req, res) =>
      sse(res, [
        {
          type: 'message_start',
          message: { model: 'claude-haiku-4-5', usage: { input_tokens: 21, output_tokens: 1 } },
        },
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Let me ' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'check.' } },
        {
          type: 'content_block_start',
          index: 1,
          content_block: { type: 'tool_use', id: 'toolu_1', name: 'weather', input: {} },
        },
        {
          type: 'content_block_delta',
          index: 1,
          delta: { type: 'input_json_delta', partial_json: '{"city":' },
        },
        {
          type: 'content_block_delta',
          index: 1,
          delta: { type: 'input_json_delta', partial_json: '"Oslo"}' },
        },
        { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 12 } },
        { type: 'message_stop' },
      ]);
    const { pieces, result } = await collect(
      router,
      request({
        provider: 'anthropic',
        baseUrl: stub.url,
        model: 'claude-haiku-4-5',
        tools: [{ type: 'function', function: { name: 'weather', parameters: { type: 'object' } } }],
        toolChoice: 'required',
      }),
    );
    expect(pieces.map((p) => p.content ?? '').join('')).toBe('Let me check.');
    expect(result).toEqual({
      output: {
        role: 'assistant',
        content: 'Let me check.',
        toolCalls: [
          { id: 'toolu_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } },
        ],
      },
      usage: { inputTokens: 21, outputTokens: 12 },
      model: 'claude-haiku-4-5',
      finishReason: 'tool_calls',
    });
    expect(stub.requests[0]?.body).toMatchObject({
      stream: true,
      tools: [{ name: 'weather', input_schema: { type: 'object' } }],
      tool_choice: { type: 'any' },
    });
  });

  it('sends tool calls and tool results as tool_use and tool_result blocks', async () => {
    stub.answer(200, WHOLE_MESSAGE);
    const result = await router.complete(
      request({
        provider: 'anthropic',
        baseUrl: stub.url,
        messages: [
          { role: 'user', content: 'weather?' },
          {
            role: 'assistant',
            content: '',
            toolCalls: [
              {
                id: 'toolu_1',
                type: 'function',
                function: { name: 'weather', arguments: '{"city":"Oslo"}' },
              },
            ],
          },
          { role: 'tool', content: 'clear', toolCallId: 'toolu_1' },
        ],
      }),
    );
    expect(result.output.content).toBe('Sunny.');
    expect((stub.requests[0]?.body as { messages: unknown[] }).messages).toEqual([
      { role: 'user', content: 'weather?' },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Oslo' } }],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'clear' }] },
    ]);
  });

  it('takes a whole Messages answer to a streamed request as the answer, in one piece', async () => {
    stub.answer(200, WHOLE_MESSAGE);
    const { pieces, result, error } = await collect(
      router,
      request({ provider: 'anthropic', baseUrl: stub.url }),
    );
    expect(error).toBeNull();
    expect(pieces).toEqual([{ content: 'Sunny.' }]);
    expect(result).toMatchObject({
      output: { content: 'Sunny.' },
      usage: { inputTokens: 30, outputTokens: 2 },
    });
  });

  it('a whole answer that is not a Messages answer is a bad response, final', async () => {
    stub.answer(200, { type: 'error' });
    const { error } = await collect(router, request({ provider: 'anthropic', baseUrl: stub.url }));
    expect(error).toMatchObject({ kind: 'final', code: 'provider_bad_response', delivery: 'unknown' });
  });
});

describe('mock, streamed', () => {
  it('answers in pieces that add up to the plain answer, and calls an offered tool when asked', async () => {
    const mock = { provider: 'mock' as const, baseUrl: null, model: 'mock-1' };
    const { pieces, result } = await collect(
      router,
      request({ ...mock, messages: [{ role: 'user', content: 'two words' }] }),
    );
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.map((p) => p.content).join('')).toBe('mock reply to: two words');
    expect(result).toEqual(
      await router.complete(request({ ...mock, messages: [{ role: 'user', content: 'two words' }] })),
    );
    const tools = [{ type: 'function', function: { name: 'lookup' } }];
    const called = await router.complete(
      request({ ...mock, tools, messages: [{ role: 'user', content: 'please call lookup' }] }),
    );
    expect(called).toMatchObject({
      output: { content: '', toolCalls: [{ function: { name: 'lookup', arguments: '{}' } }] },
      finishReason: 'tool_calls',
    });
  });
});
