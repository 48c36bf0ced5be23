import { ProviderError, type CompletionRequest, type StreamDelta } from '../../../domain/providers';
import { ProviderRouter } from '../../../infra/providers/provider-router';
import { installTelemetry } from '../../../infra/telemetry';
import { StubProvider } from '../../support/stub-provider';
import { collect, sse, sseInPieces, textOf, sseThenDrop } from './stream-harness';

/** Anthropic Messages with tools, plain and streamed, mapped to and from Chat Completions' shapes. */
const SECRET = 'sk-ant-api03-ANTHROPICSTREAMSECRET77';
let stub: StubProvider;
const router = new ProviderRouter({ allowPrivateHosts: true });

beforeAll(async () => {
  installTelemetry({ serviceName: 'anthropic-stream-test' });
  stub = await new StubProvider().start();
});
afterAll(async () => {
  await stub.stop();
  await router.close();
});
beforeEach(() => stub.requests.splice(0));

const request = (over: Partial<CompletionRequest> = {}): CompletionRequest => ({
  provider: 'anthropic',
  baseUrl: stub.url,
  secret: SECRET,
  model: 'claude-haiku-4-5',
  messages: [
    { role: 'system', content: 'be brief' },
    { role: 'user', content: 'weather in Oslo?' },
  ],
  maxTokens: 64,
  timeoutMs: 2_000,
  ...over,
});

const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } } },
  },
};
const sentBody = () => stub.requests[0]?.body as Record<string, unknown>;

/** A Messages answer that says something and calls a tool. */
const toolMessage = {
  id: 'msg_1',
  type: 'message',
  role: 'assistant',
  model: 'claude-haiku-4-5-20251001',
  content: [
    { type: 'text', text: 'Let me check.' },
    { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } },
  ],
  stop_reason: 'tool_use',
  usage: { input_tokens: 52, output_tokens: 17 },
};

/** The same answer as Messages streaming events (with the event names and a ping, as Anthropic sends them). */
const toolEvents = [
  {
    event: 'message_start',
    data: {
      type: 'message_start',
      message: {
        ...toolMessage,
        content: [],
        stop_reason: null,
        usage: { input_tokens: 52, output_tokens: 1 },
      },
    },
  },
  {
    event: 'content_block_start',
    data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
  },
  { event: 'ping', data: { type: 'ping' } },
  {
    event: 'content_block_delta',
    data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Let ' } },
  },
  {
    event: 'content_block_delta',
    data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'me check.' } },
  },
  { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
  {
    event: 'content_block_start',
    data: {
      type: 'content_block_start',
      index: 1,
      content_block: { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} },
    },
  },
  {
    event: 'content_block_delta',
    data: {
      type: 'content_block_delta',
      index: 1,
      delta: { type: 'input_json_delta', partial_json: '{"city":' },
    },
  },
  {
    event: 'content_block_delta',
    data: {
      type: 'content_block_delta',
      index: 1,
      delta: { type: 'input_json_delta', partial_json: '"Oslo"}' },
    },
  },
  { event: 'content_block_stop', data: { type: 'content_block_stop', index: 1 } },
  {
    event: 'message_delta',
    data: {
      type: 'message_delta',
      delta: { stop_reason: 'tool_use', stop_sequence: null },
      usage: { output_tokens: 17 },
    },
  },
  { event: 'message_stop', data: { type: 'message_stop' } },
];
const upToMessageDelta = toolEvents.slice(0, -1);
const textSoFar = toolEvents.slice(0, 5);

describe('anthropic, tool calls in a plain call', () => {
  it('maps function tools to Anthropic tools and answers tool_use blocks as tool calls', async () => {
    stub.answer(200, toolMessage);
    const bare = { type: 'function', function: { name: 'now' } };
    const result = await router.complete(request({ tools: [weatherTool, bare] }));
    expect(result).toEqual({
      output: {
        role: 'assistant',
        content: 'Let me check.',
        toolCalls: [
          {
            id: 'toolu_1',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"city":"Oslo"}' },
          },
        ],
      },
      usage: { inputTokens: 52, outputTokens: 17 },
      model: 'claude-haiku-4-5-20251001',
      finishReason: 'tool_calls',
    });
    expect(sentBody().tools).toEqual([
      {
        name: 'get_weather',
        description: 'Weather for a city',
        input_schema: { type: 'object', properties: { city: { type: 'string' } } },
      },
      { name: 'now', input_schema: { type: 'object', properties: {} } },
    ]);
    expect(sentBody()).not.toHaveProperty('tool_choice');
  });

  it.each([
    ['auto', { type: 'auto' }],
    ['none', { type: 'none' }],
    ['required', { type: 'any' }],
    [
      { type: 'function', function: { name: 'get_weather' } },
      { type: 'tool', name: 'get_weather' },
    ],
  ])('maps tool_choice %j to %j', async (choice, mapped) => {
    stub.answer(200, toolMessage);
    await router.complete(request({ tools: [weatherTool], toolChoice: choice }));
    expect(sentBody().tool_choice).toEqual(mapped);
  });

  it('sends no tools and no tool_choice when none are given', async () => {
    stub.answer(200, toolMessage);
    await router.complete(request());
    expect(sentBody()).not.toHaveProperty('tools');
    expect(sentBody()).not.toHaveProperty('tool_choice');
  });

  it.each([
    ['end_turn', 'stop'],
    ['stop_sequence', 'stop'],
    ['max_tokens', 'length'],
    ['tool_use', 'tool_calls'],
  ])('maps stop_reason %s to finish reason %s', async (stopReason, finishReason) => {
    stub.answer(200, { ...toolMessage, stop_reason: stopReason });
    expect((await router.complete(request())).finishReason).toBe(finishReason);
  });

  it('sends assistant tool calls as tool_use blocks, and parallel tool results together in one user turn', async () => {
    stub.answer(200, {
      ...toolMessage,
      content: [{ type: 'text', text: 'Clear, 3°C.' }],
      stop_reason: 'end_turn',
    });
    const call = (id: string, args: string) => ({
      id,
      type: 'function' as const,
      function: { name: 'get_weather', arguments: args },
    });
    const result = await router.complete(
      request({
        tools: [weatherTool],
        messages: [
          { role: 'system', content: 'be brief' },
          { role: 'user', content: 'weather in Oslo and Bergen?' },
          {
            role: 'assistant',
            content: 'Checking both.',
            toolCalls: [call('toolu_1', '{"city":"Oslo"}'), call('toolu_2', 'not json')],
          },
          { role: 'tool', content: 'clear', toolCallId: 'toolu_1' },
          { role: 'tool', content: 'rain', toolCallId: 'toolu_2' },
        ],
      }),
    );
    expect(result).toMatchObject({ output: { content: 'Clear, 3°C.' }, finishReason: 'stop' });
    expect(sentBody().system).toBe('be brief');
    expect(sentBody().messages).toEqual([
      { role: 'user', content: 'weather in Oslo and Bergen?' },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Checking both.' },
          { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } },
          { type: 'tool_use', id: 'toolu_2', name: 'get_weather', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: 'clear' },
          { type: 'tool_result', tool_use_id: 'toolu_2', content: 'rain' },
        ],
      },
    ]);
  });
});

describe('anthropic, streamed', () => {
  it('hands on text and tool-call pieces in order, and they assemble to what the plain call answers', async () => {
    stub.handler = (_req, res) => void sseInPieces(res, toolEvents);
    const req = request({ tools: [weatherTool], toolChoice: 'auto' });
    const { pieces, result, error } = await collect(router, req);
    expect(error).toBeNull();
    expect(pieces).toEqual<StreamDelta[]>([
      { content: 'Let ' },
      { content: 'me check.' },
      { toolCalls: [{ index: 0, id: 'toolu_1', name: 'get_weather' }] },
      { toolCalls: [{ index: 0, arguments: '{"city":' }] },
      { toolCalls: [{ index: 0, arguments: '"Oslo"}' }] },
    ]);
    expect(result).toEqual({
      output: {
        role: 'assistant',
        content: 'Let me check.',
        toolCalls: [
          {
            id: 'toolu_1',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"city":"Oslo"}' },
          },
        ],
      },
      usage: { inputTokens: 52, outputTokens: 17 },
      model: 'claude-haiku-4-5-20251001',
      finishReason: 'tool_calls',
    });
    stub.answer(200, toolMessage);
    expect(result).toEqual(await router.complete(req));
  });

  it('asks for a stream with the same body a plain call sends, and the same headers', async () => {
    stub.handler = (_req, res) => sse(res, toolEvents);
    await collect(
      router,
      request({
        tools: [weatherTool],
        toolChoice: 'required',
        trace: { traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01` },
      }),
    );
    const [sent] = stub.requests;
    expect(sent?.path).toBe('/v1/messages');
    expect(sent?.headers['x-api-key']).toBe(SECRET);
    expect(sent?.headers['anthropic-version']).toBe('2023-06-01');
    // The caller's trace, under the provider span's own id; nothing receives spans in this file, so
    // that span is not recorded, and says so (not sampled).
    expect(sent?.headers.traceparent).toMatch(/^00-a{32}-(?!b{16})[0-9a-f]{16}-00$/);
    expect(sent?.body).toMatchObject({
      stream: true,
      model: 'claude-haiku-4-5',
      max_tokens: 64,
      system: 'be brief',
      tools: [{ name: 'get_weather' }],
      tool_choice: { type: 'any' },
    });
  });

  it('a tool called without arguments streams pieces that add up to {}', async () => {
    stub.handler = (_req, res) =>
      sse(res, [
        toolEvents[0],
        {
          type: 'content_block_start',
          index: 0,
          content_block: { type: 'tool_use', id: 'toolu_9', name: 'now', input: {} },
        },
        { type: 'content_block_stop', index: 0 },
        { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 5 } },
        { type: 'message_stop' },
      ]);
    const { pieces, result } = await collect(router, request());
    expect(
      pieces
        .flatMap((p) => p.toolCalls ?? [])
        .map((c) => c.arguments ?? '')
        .join(''),
    ).toBe('{}');
    expect(result?.output.toolCalls).toEqual([
      { id: 'toolu_9', type: 'function', function: { name: 'now', arguments: '{}' } },
    ]);
  });
});

describe('anthropic, a stream that fails', () => {
  it.each([
    [529, 'retryable', 'provider_unavailable'],
    [429, 'retryable', 'provider_rate_limited'],
    [400, 'final', 'provider_rejected'],
    [401, 'final', 'provider_auth_failed'],
  ])(
    'answers %s before the stream as the same classified error a plain call gives',
    async (status, kind, code) => {
      stub.answer(status, { type: 'error', error: { type: 'x', message: `bad key ${SECRET}` } });
      const { error, pieces } = await collect(router, request());
      expect(pieces).toEqual([]);
      expect(error).toBeInstanceOf(ProviderError);
      expect(error).toMatchObject({ kind, code, status, delivery: 'answered', streamed: null });
      expect(error?.message).not.toContain(SECRET.slice(8, 20));
    },
  );

  it('a connection dropped after the text began: connection lost, unknown, the text, and no partial usage', async () => {
    stub.handler = sseThenDrop(textSoFar);
    const { pieces, error } = await collect(router, request());
    expect(textOf(pieces)).toBe('Let me check.');
    expect(error).toBeInstanceOf(ProviderError);
    // message_start's output count is a placeholder: reporting it would charge too little.
    expect(error).toMatchObject({
      code: 'provider_connection_lost',
      delivery: 'unknown',
      streamed: { content: 'Let me check.', usage: null },
    });
    expect(error?.message).not.toContain(SECRET);
  });

  it('a connection dropped inside a tool_use block keeps its name and the input that arrived, for the charge', async () => {
    stub.handler = sseThenDrop(toolEvents.slice(0, 8));
    const { error } = await collect(router, request());
    expect(error).toMatchObject({
      code: 'provider_connection_lost',
      delivery: 'unknown',
      streamed: { content: 'Let me check.', toolCallText: 'get_weather{"city":', usage: null },
    });
  });

  it('a connection dropped after message_delta keeps the usage the provider reported', async () => {
    stub.handler = sseThenDrop([
      ...upToMessageDelta.slice(0, -1),
      { type: 'message_delta', delta: {}, usage: { output_tokens: 9 } },
    ]);
    const { error } = await collect(router, request());
    // No stop_reason yet, so it may not be over: still a broken stream, but its usage is known.
    expect(error).toMatchObject({
      delivery: 'unknown',
      streamed: { content: 'Let me check.', usage: { inputTokens: 52, outputTokens: 9 } },
    });
  });

  it('an answer complete but for message_stop is taken as it is', async () => {
    stub.handler = (_req, res) => sse(res, upToMessageDelta);
    const { result } = await collect(router, request());
    expect(result).toMatchObject({
      usage: { inputTokens: 52, outputTokens: 17 },
      finishReason: 'tool_calls',
    });
  });

  it('an error event mid-stream (overloaded) is an unusable answer of unknown outcome, without the secret', async () => {
    stub.handler = (_req, res) =>
      sse(res, [
        ...textSoFar,
        {
          event: 'error',
          data: { type: 'error', error: { type: 'overloaded_error', message: `Overloaded ${SECRET}` } },
        },
      ]);
    const { error } = await collect(router, request());
    expect(error).toMatchObject({
      code: 'provider_bad_response',
      delivery: 'unknown',
      streamed: { content: 'Let me check.', usage: null },
    });
    expect(error?.message).toContain('Overloaded');
    expect(error?.message).not.toContain(SECRET.slice(8, 20));
  });

  it('an abort through the signal mid-stream: provider_aborted, final, delivery unknown, the text so far', async () => {
    stub.handler = (_req, res) => sse(res, textSoFar, false);
    const hangUp = new AbortController();
    const error = await router
      .stream(request({ signal: hangUp.signal }), () => setTimeout(() => hangUp.abort(), 10))
      .catch((e: unknown) => e as ProviderError);
    expect(error).toMatchObject({
      kind: 'final',
      code: 'provider_aborted',
      delivery: 'unknown',
      streamed: { content: 'Let me check.', usage: null },
    });
  });

  it('the whole-call timeout applies to a stream', async () => {
    stub.handler = (_req, res) => sse(res, textSoFar, false);
    const started = Date.now();
    const { error } = await collect(router, request({ timeoutMs: 300 }));
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(error).toMatchObject({
      kind: 'retryable',
      code: 'provider_timeout',
      delivery: 'unknown',
      streamed: { content: 'Let me check.', usage: null },
    });
  });
});
