import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ProviderError, type CompletionRequest, type StreamDelta } from '../../../domain/providers';
import { ProviderRouter } from '../../../infra/providers/provider-router';
import { addSpanProcessor, installTelemetry } from '../../../infra/telemetry';
import { StubProvider } from '../../support/stub-provider';
import { collect, openStream, sse, sseInPieces, sseText, textOf, sseThenDrop } from './stream-harness';

/** Chat Completions with tools, plain and streamed, through the router against a local stub. */
const SECRET = 'sk-proj-OPENAISTREAMSECRET4242';
let stub: StubProvider;
const router = new ProviderRouter({ allowPrivateHosts: true });
const spans = new InMemorySpanExporter();

beforeAll(async () => {
  installTelemetry({ serviceName: 'provider-stream-test' });
  addSpanProcessor(new SimpleSpanProcessor(spans));
  stub = await new StubProvider().start();
});
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
  messages: [{ role: 'user', content: 'weather in Oslo?' }],
  maxTokens: 50,
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
const toolCall = {
  id: 'call_1',
  type: 'function' as const,
  function: { name: 'get_weather', arguments: '{"city":"Oslo"}' },
};

/** The chunks of an answer that says something, then calls a tool, then reports usage. */
const toolChunks = [
  { model: 'llama-3-8b-instruct', choices: [{ index: 0, delta: { role: 'assistant', content: 'Let ' } }] },
  { choices: [{ index: 0, delta: { content: 'me check.' } }], usage: null },
  {
    choices: [
      {
        index: 0,
        delta: {
          tool_calls: [
            { index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } },
          ],
        },
      },
    ],
  },
  { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] } }] },
  { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '"Oslo"}' } }] } }] },
  { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
  { choices: [], usage: { prompt_tokens: 30, completion_tokens: 11, total_tokens: 41 } },
  '[DONE]',
];

/** The same answer as one Chat Completions object. */
const toolCompletion = {
  id: 'chatcmpl-1',
  model: 'llama-3-8b-instruct',
  choices: [
    {
      index: 0,
      message: { role: 'assistant', content: 'Let me check.', tool_calls: [toolCall] },
      finish_reason: 'tool_calls',
    },
  ],
  usage: { prompt_tokens: 30, completion_tokens: 11, total_tokens: 41 },
};

const conversation: CompletionRequest['messages'] = [
  { role: 'system', content: 'be brief' },
  { role: 'user', content: 'weather in Oslo?' },
  { role: 'assistant', content: '', toolCalls: [toolCall] },
  { role: 'tool', content: '{"sky":"clear"}', toolCallId: 'call_1' },
];

describe('openai and openai_compatible, tool calls in a plain call', () => {
  it('sends tools and tool_choice and reads back tool_calls and finish_reason', async () => {
    stub.answer(200, toolCompletion);
    const choice = { type: 'function', function: { name: 'get_weather' } };
    const result = await router.complete(request({ tools: [weatherTool], toolChoice: choice }));
    expect(result).toEqual({
      output: { role: 'assistant', content: 'Let me check.', toolCalls: [toolCall] },
      usage: { inputTokens: 30, outputTokens: 11 },
      model: 'llama-3-8b-instruct',
      finishReason: 'tool_calls',
    });
    expect(stub.requests[0]?.body).toMatchObject({ tools: [weatherTool], tool_choice: choice });
  });

  it('sends neither tools nor tool_choice when none are given', async () => {
    stub.answer(200, toolCompletion);
    await router.complete(request());
    expect(stub.requests[0]?.body).not.toHaveProperty('tools');
    expect(stub.requests[0]?.body).not.toHaveProperty('tool_choice');
  });

  it('sends an assistant turn that only calls tools with content null, and a tool turn with its call id', async () => {
    stub.answer(200, {
      model: 'gpt-4o-mini',
      choices: [{ message: { role: 'assistant', content: 'Clear skies.' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 40, completion_tokens: 3 },
    });
    const result = await router.complete(
      request({ provider: 'openai', model: 'gpt-4o-mini', messages: conversation, tools: [weatherTool] }),
    );
    expect(result).toMatchObject({ output: { content: 'Clear skies.' }, finishReason: 'stop' });
    expect(result.output).not.toHaveProperty('toolCalls');
    expect((stub.requests[0]?.body as { messages: unknown }).messages).toEqual([
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'weather in Oslo?' },
      { role: 'assistant', content: null, tool_calls: [toolCall] },
      { role: 'tool', content: '{"sky":"clear"}', tool_call_id: 'call_1' },
    ]);
  });

  it('keeps the text of an assistant turn that says something and calls a tool', async () => {
    stub.answer(200, toolCompletion);
    await router.complete(
      request({ messages: [{ role: 'assistant', content: 'Let me check.', toolCalls: [toolCall] }] }),
    );
    expect((stub.requests[0]?.body as { messages: unknown }).messages).toEqual([
      { role: 'assistant', content: 'Let me check.', tool_calls: [toolCall] },
    ]);
  });

  it('refuses tool_calls that are not function calls as an unusable answer (delivery unknown)', async () => {
    stub.answer(200, {
      choices: [{ message: { content: null, tool_calls: [{ id: 'x', function: { name: 3 } }] } }],
      usage: { prompt_tokens: 1, completion_tokens: 1 },
    });
    await expect(router.complete(request())).rejects.toMatchObject({
      code: 'provider_bad_response',
      delivery: 'unknown',
    });
  });
});

describe('openai and openai_compatible, streamed', () => {
  it('hands on the pieces in order, and they assemble to what the plain call answers', async () => {
    stub.handler = (_req, res) => void sseInPieces(res, toolChunks);
    const req = request({ tools: [weatherTool], toolChoice: 'auto' });
    const { pieces, result, error } = await collect(router, req);
    expect(error).toBeNull();
    expect(pieces).toEqual<StreamDelta[]>([
      { content: 'Let ' },
      { content: 'me check.' },
      { toolCalls: [{ index: 0, id: 'call_1', name: 'get_weather', arguments: '' }] },
      { toolCalls: [{ index: 0, arguments: '{"city":' }] },
      { toolCalls: [{ index: 0, arguments: '"Oslo"}' }] },
    ]);
    stub.answer(200, toolCompletion);
    expect(result).toEqual(await router.complete(req));
    expect(textOf(pieces)).toBe(result?.output.content);
  });

  it("takes a tool call's id and name once, the first not empty: repeats and blanks change neither (QA)", async () => {
    const call = (fn: Record<string, string>, id?: string) => ({
      choices: [
        {
          index: 0,
          delta: { tool_calls: [{ index: 0, ...(id !== undefined ? { id } : {}), function: fn }] },
        },
      ],
    });
    stub.handler = (_req, res) =>
      sse(res, [
        call({ name: '', arguments: '' }, ''),
        call({ name: 'f', arguments: '{"a":' }, 'call_A'),
        call({ name: 'g', arguments: '1' }, 'call_B'),
        call({ name: '', arguments: '}' }, ''),
        { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
        { choices: [], usage: { prompt_tokens: 5, completion_tokens: 9 } },
        '[DONE]',
      ]);
    const { pieces, result } = await collect(router, request());
    expect(result?.output.toolCalls).toEqual([
      { id: 'call_A', type: 'function', function: { name: 'f', arguments: '{"a":1}' } },
    ]);
    // What a client assembles from the pieces is what is stored: each named once.
    expect(
      pieces.flatMap((p) => p.toolCalls ?? []).filter((c) => c.id !== undefined || c.name !== undefined),
    ).toEqual([{ index: 0, id: 'call_A', name: 'f', arguments: '{"a":' }]);
  });

  it('asks for a stream with the usage chunk, with the tools, and the event-stream type', async () => {
    stub.handler = (_req, res) => sse(res, toolChunks);
    await collect(router, request({ provider: 'openai', tools: [weatherTool], toolChoice: 'required' }));
    const [sent] = stub.requests;
    expect(sent?.body).toMatchObject({
      model: 'llama-3-8b',
      stream: true,
      stream_options: { include_usage: true },
      max_completion_tokens: 50,
      tools: [weatherTool],
      tool_choice: 'required',
    });
    expect(sent?.headers.accept).toBe('text/event-stream');
    expect(sent?.headers.authorization).toBe(`Bearer ${SECRET}`);
  });

  it('assembles parallel tool calls by their index, whatever order their pieces come in', async () => {
    const call = (index: number, fn: Record<string, string>, id?: string) => ({
      choices: [{ index: 0, delta: { tool_calls: [{ index, ...(id ? { id } : {}), function: fn }] } }],
    });
    stub.handler = (_req, res) =>
      sse(res, [
        call(1, { name: 'b', arguments: '{"y":' }, 'call_b'),
        call(0, { name: 'a', arguments: '{}' }, 'call_a'),
        call(1, { arguments: '2}' }),
        { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
        { choices: [], usage: { prompt_tokens: 5, completion_tokens: 9 } },
        '[DONE]',
      ]);
    const { result } = await collect(router, request());
    expect(result?.output).toEqual({
      role: 'assistant',
      content: '',
      toolCalls: [
        { id: 'call_a', type: 'function', function: { name: 'a', arguments: '{}' } },
        { id: 'call_b', type: 'function', function: { name: 'b', arguments: '{"y":2}' } },
      ],
    });
  });

  it('takes the usage some compatible servers send on the finishing chunk, with or without [DONE]', async () => {
    stub.handler = (_req, res) =>
      sse(res, [
        { choices: [{ index: 0, delta: { content: 'ok' } }] },
        {
          choices: [{ index: 0, delta: {}, finish_reason: 'length' }],
          usage: { prompt_tokens: 3, completion_tokens: 1 },
        },
      ]);
    const { result } = await collect(router, request());
    expect(result).toMatchObject({
      output: { content: 'ok' },
      usage: { inputTokens: 3, outputTokens: 1 },
      finishReason: 'length',
    });
  });

  it('keeps characters whose UTF-8 bytes are split across network reads', async () => {
    const text = 'Blåbær på fjellet 🫐';
    stub.handler = (_req, res) => {
      openStream(res);
      const bytes = Buffer.from(
        [
          { choices: [{ index: 0, delta: { content: text } }] },
          { choices: [], usage: { prompt_tokens: 2, completion_tokens: 8 } },
          '[DONE]',
        ]
          .map(sseText)
          .join(''),
      );
      // One byte a write, each flushed on its own, so multi-byte characters straddle reads.
      const writeFrom = (i: number): void => {
        if (i >= bytes.length) return void res.end();
        res.write(bytes.subarray(i, i + 1), () => setImmediate(() => writeFrom(i + 1)));
      };
      writeFrom(0);
    };
    const { result } = await collect(router, request());
    expect(result?.output.content).toBe(text);
  });

  it('sends the trace context as a plain call does, under its own provider.stream client span', async () => {
    stub.handler = (_req, res) => sse(res, toolChunks);
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    await collect(router, request({ trace: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } }));
    const sent = stub.requests[0]?.headers.traceparent as string;
    expect(sent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    const span = spans.getFinishedSpans().find((s) => s.spanContext().traceId === traceId);
    expect(span?.name).toBe('provider.stream');
    expect(span?.parentSpanContext?.spanId).toBe('00f067aa0ba902b7');
    expect(sent.split('-')[2]).toBe(span?.spanContext().spanId);
  });
});

describe('openai and openai_compatible, a stream that fails', () => {
  it.each([
    [500, 'retryable', 'provider_unavailable'],
    [429, 'retryable', 'provider_rate_limited'],
    [400, 'final', 'provider_rejected'],
    [401, 'final', 'provider_auth_failed'],
  ])(
    'answers %s before the stream as the same classified error a plain call gives',
    async (status, kind, code) => {
      stub.answer(status, { error: { message: `refused for key ${SECRET}` } }, { 'retry-after': '3' });
      const { error, pieces } = await collect(router, request());
      expect(pieces).toEqual([]);
      expect(error).toBeInstanceOf(ProviderError);
      expect(error).toMatchObject({ kind, code, status, delivery: 'answered', streamed: null });
      expect(error?.message).not.toContain(SECRET.slice(8, 20));
      const plain = await router.complete(request()).then(
        () => null,
        (e: unknown) => e as ProviderError,
      );
      expect(error).toMatchObject({
        kind: plain?.kind,
        code: plain?.code,
        retryAfterSeconds: plain?.retryAfterSeconds,
      });
    },
  );

  it('a connection dropped mid-stream: provider_connection_lost, delivery unknown, the text so far', async () => {
    stub.handler = sseThenDrop(toolChunks.slice(0, 2));
    const { pieces, error } = await collect(router, request());
    expect(textOf(pieces)).toBe('Let me check.');
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({
      kind: 'retryable',
      code: 'provider_connection_lost',
      delivery: 'unknown',
      streamed: { content: 'Let me check.', usage: null },
    });
    expect(error?.message).not.toContain(SECRET);
  });

  it('a connection dropped inside a tool call keeps the name and arguments that arrived, for the charge', async () => {
    stub.handler = sseThenDrop(toolChunks.slice(0, 4));
    const { error } = await collect(router, request());
    expect(error).toMatchObject({
      code: 'provider_connection_lost',
      delivery: 'unknown',
      streamed: { content: 'Let me check.', toolCallText: 'get_weather{"city":', usage: null },
    });
  });

  it('a body that ends cleanly before [DONE] and the usage was cut off on the way', async () => {
    stub.handler = (_req, res) => sse(res, toolChunks.slice(0, 2));
    const { error } = await collect(router, request());
    expect(error).toMatchObject({
      code: 'provider_connection_lost',
      delivery: 'unknown',
      streamed: { content: 'Let me check.', usage: null },
    });
  });

  it('a running usage count on a middle chunk is not taken for the whole call', async () => {
    stub.handler = sseThenDrop([
      {
        choices: [{ index: 0, delta: { content: 'a' } }],
        usage: { prompt_tokens: 9, completion_tokens: 1 },
      },
    ]);
    const { error } = await collect(router, request());
    expect(error).toMatchObject({ delivery: 'unknown', streamed: { content: 'a', usage: null } });
  });

  it('[DONE] without any usage is an unusable answer the provider may bill: provider_bad_response, unknown', async () => {
    stub.handler = (_req, res) => sse(res, [...toolChunks.slice(0, 2), '[DONE]']);
    const { error } = await collect(router, request());
    expect(error).toMatchObject({
      kind: 'final',
      code: 'provider_bad_response',
      delivery: 'unknown',
      streamed: { content: 'Let me check.', usage: null },
    });
  });

  it('an error event mid-stream is an unusable answer, its message kept without the secret', async () => {
    stub.handler = (_req, res) =>
      sse(res, [toolChunks[0], { error: { message: `overloaded, key ${SECRET}`, type: 'server_error' } }]);
    const { error } = await collect(router, request());
    expect(error).toMatchObject({
      code: 'provider_bad_response',
      delivery: 'unknown',
      streamed: { content: 'Let ' },
    });
    expect(error?.message).toContain('overloaded');
    expect(error?.message).not.toContain(SECRET.slice(8, 20));
  });

  it('an abort through the signal mid-stream: provider_aborted, final, delivery unknown, the text so far', async () => {
    stub.handler = (_req, res) => sse(res, toolChunks.slice(0, 1), false);
    const hangUp = new AbortController();
    const pieces: StreamDelta[] = [];
    const error = await router
      .stream(request({ signal: hangUp.signal }), (d) => {
        pieces.push(d);
        setTimeout(() => hangUp.abort(), 10);
      })
      .catch((e: unknown) => e as ProviderError);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({
      kind: 'final',
      code: 'provider_aborted',
      delivery: 'unknown',
      streamed: { content: 'Let ', usage: null },
    });
  });

  it('an abort after the request was sent and before any answer: unknown, with nothing streamed', async () => {
    stub.handler = () => undefined; // holds the request, answers nothing
    const hangUp = new AbortController();
    setTimeout(() => hangUp.abort(), 50);
    const { error } = await collect(router, request({ signal: hangUp.signal }));
    expect(error).toMatchObject({
      kind: 'final',
      code: 'provider_aborted',
      delivery: 'unknown',
      streamed: { content: '', usage: null },
    });
  });

  it('the whole-call timeout applies to a stream that stalls, and to one that never starts', async () => {
    stub.handler = (_req, res) => sse(res, toolChunks.slice(0, 1), false);
    const started = Date.now();
    const stalled = await collect(router, request({ timeoutMs: 300 }));
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(stalled.error).toMatchObject({
      kind: 'retryable',
      code: 'provider_timeout',
      delivery: 'unknown',
      streamed: { content: 'Let ', usage: null },
    });
    stub.handler = () => undefined;
    const silent = await collect(router, request({ timeoutMs: 200 }));
    expect(silent.error).toMatchObject({
      code: 'provider_timeout',
      delivery: 'unknown',
      streamed: { content: '', usage: null },
    });
  });

  it('the timeout covers the whole stream, not each piece', async () => {
    stub.handler = (_req, res) => {
      openStream(res);
      const timer = setInterval(
        () => res.write(sseText({ choices: [{ index: 0, delta: { content: '.' } }] })),
        40,
      );
      res.on('close', () => clearInterval(timer));
    };
    const { error, pieces } = await collect(router, request({ timeoutMs: 400 }));
    expect(error).toMatchObject({ code: 'provider_timeout', delivery: 'unknown' });
    expect(pieces.length).toBeGreaterThan(2);
    expect(error?.streamed?.content).toBe(textOf(pieces));
  });
});
