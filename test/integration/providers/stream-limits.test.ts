import type { CompletionRequest } from '../../../domain/providers';
import { ProviderRouter } from '../../../infra/providers/provider-router';
import { StubProvider } from '../../support/stub-provider';
import { collect, openStream, sse, sseText, textOf } from './stream-harness';

/**
 * What a streamed answer may hold, and what its events may weigh. The cap (8 MiB unless told)
 * bounds the answer and any one event; the bytes on the wire, which frame every piece, may run to
 * eight times it, so a long answer from a real provider is not cut for its framing.
 */
let stub: StubProvider;
const router = new ProviderRouter({ allowPrivateHosts: true });
const small = new ProviderRouter({ allowPrivateHosts: true, maxResponseBytes: 2_048 });

beforeAll(async () => {
  stub = await new StubProvider().start();
});
afterAll(async () => {
  await stub.stop();
  await Promise.all([router.close(), small.close()]);
});

const request = (over: Partial<CompletionRequest> = {}): CompletionRequest => ({
  provider: 'openai_compatible',
  baseUrl: `${stub.url}/v1`,
  secret: 'sk-proj-STREAMLIMITS',
  model: 'gpt-4.1',
  messages: [{ role: 'user', content: 'write a long story' }],
  maxTokens: 100_000,
  timeoutMs: 10_000,
  ...over,
});

/** One token's chunk as OpenAI frames it: about 270 bytes on the wire for a few characters. */
const tokenChunk = (content: string) => ({
  id: 'chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT',
  object: 'chat.completion.chunk',
  created: 1741569952,
  model: 'gpt-4.1-2025-04-14',
  service_tier: 'default',
  system_fingerprint: 'fp_b376dfbbd5',
  choices: [{ index: 0, delta: { content }, logprobs: null, finish_reason: null }],
});
const usageChunk = (outputTokens: number) => ({
  choices: [],
  usage: { prompt_tokens: 12, completion_tokens: outputTokens },
});

/** The whole stream of `tokens` chunks, written at once. */
function longAnswer(tokens: number, content = ' the'): string {
  const one = sseText(tokenChunk(content));
  return one.repeat(tokens) + sseText(usageChunk(tokens)) + sseText('[DONE]');
}

describe('what a streamed answer may hold', () => {
  it('a long answer whose framing passes the cap is not cut: 40,000 tokens in 11 MB of events', async () => {
    const body = longAnswer(40_000);
    expect(Buffer.byteLength(body)).toBeGreaterThan(8 * 1024 * 1024);
    stub.handler = (_req, res) => {
      openStream(res);
      res.end(body);
    };
    const { result, error, pieces } = await collect(router, request());
    expect(error).toBeNull();
    expect(result?.output.content).toHaveLength(160_000);
    expect(result?.usage).toEqual({ inputTokens: 12, outputTokens: 40_000 });
    expect(textOf(pieces)).toBe(result?.output.content);
  });

  it('framing is not counted against the answer: 50 events of one character pass a cap of 2,048', async () => {
    const body = longAnswer(50, 'x');
    expect(Buffer.byteLength(body)).toBeGreaterThan(2_048 * 5);
    stub.handler = (_req, res) => {
      openStream(res);
      res.end(body);
    };
    const { result, error } = await collect(small, request());
    expect(error).toBeNull();
    expect(result?.output.content).toBe('x'.repeat(50));
  });

  it('an answer past the cap ends the stream: an unusable answer, delivery unknown, what arrived kept', async () => {
    stub.handler = (_req, res) =>
      sse(res, [...Array.from({ length: 40 }, () => tokenChunk('x'.repeat(100))), usageChunk(40), '[DONE]']);
    const { error, pieces } = await collect(small, request());
    expect(error).toMatchObject({ code: 'provider_bad_response', delivery: 'unknown' });
    expect(error?.message).toContain('the answer ran past 2048 characters');
    expect(textOf(pieces)).toBe('x'.repeat(2_000)); // the piece that passed it is not handed on
    expect(error?.streamed?.content.startsWith(textOf(pieces))).toBe(true);
  });

  it('tool-call arguments count toward the answer as text does', async () => {
    const argument = (text: string) => ({
      choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: text } }] } }],
    });
    const opening = {
      choices: [
        {
          index: 0,
          delta: { tool_calls: [{ index: 0, id: 'call_1', function: { name: 'save', arguments: '' } }] },
        },
      ],
    };
    stub.handler = (_req, res) =>
      sse(res, [
        opening,
        ...Array.from({ length: 30 }, () => argument('y'.repeat(100))),
        usageChunk(30),
        '[DONE]',
      ]);
    const { error } = await collect(small, request());
    expect(error).toMatchObject({ code: 'provider_bad_response', delivery: 'unknown' });
    expect(error?.message).toContain('the answer ran past 2048 characters');
  });
});

describe('what a stream may weigh', () => {
  it('bytes past eight times the cap end the stream, though they carry no answer', async () => {
    const empty = sseText({ choices: [{ index: 0, delta: {}, finish_reason: null }], pad: 'p'.repeat(60) });
    stub.handler = (_req, res) => {
      openStream(res);
      res.end(empty.repeat(Math.ceil((8 * 2_048 * 1.5) / empty.length)) + sseText('[DONE]'));
    };
    const { error, pieces } = await collect(small, request());
    expect(error).toMatchObject({ code: 'provider_bad_response', delivery: 'unknown' });
    expect(error?.message).toContain(`response larger than ${8 * 2_048} bytes`);
    expect(pieces).toEqual([]);
  });

  it('an event longer than the cap ends the stream before it is all held', async () => {
    stub.handler = (_req, res) => {
      openStream(res);
      res.write(`data: {"choices":[{"index":0,"delta":{"content":"${'z'.repeat(3_000)}`); // never finished
    };
    const { error } = await collect(small, request());
    expect(error).toMatchObject({ code: 'provider_bad_response', delivery: 'unknown' });
    expect(error?.message).toContain('a stream event longer than 2048 characters');
  });

  it('so does an event of many short data lines', async () => {
    stub.handler = (_req, res) => {
      openStream(res);
      res.write(`data: ${'w'.repeat(100)}\n`.repeat(30)); // no blank line: one event, still open
    };
    const { error } = await collect(small, request());
    expect(error).toMatchObject({ code: 'provider_bad_response', delivery: 'unknown' });
    expect(error?.message).toContain('a stream event longer than 2048 characters');
  });
});
