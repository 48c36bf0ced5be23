import type { ServerResponse } from 'node:http';
import OpenAI from 'openai';
import { mintKey } from '../support/factories';
import {
  eventually,
  finished,
  openSession,
  setUpInvoking,
  type InvokeSetup,
} from '../support/invoke-fixtures';
import { openaiClient } from '../support/openai-sdk';
import { StubProvider } from '../support/stub-provider';
import { startTestApp, type TestApp } from '../support/test-app';

/** Streams under the session's caps, and a client hanging up mid-stream. */
let app: TestApp;
let stub: StubProvider;
let mock: InvokeSetup;
let stubbed: InvokeSetup;
let mockKey: string;
let stubKey: string;
/** Set when the provider saw its connection closed before it finished answering. */
let providerCutOff = false;

const clientFor = (apiKey: string, sessionId: string) =>
  openaiClient(app.http.baseUrl, apiKey, { 'X-Session-Id': sessionId });

/** An OpenAI-style stream that sends a word every 50 ms, 200 words, then usage. */
function slowStream(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  let n = 0;
  const chunk = (body: unknown) => res.write(`data: ${JSON.stringify(body)}\n\n`);
  const timer = setInterval(() => {
    if (n < 200) return void chunk({ choices: [{ index: 0, delta: { content: `word${n++} ` } }] });
    clearInterval(timer);
    chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
    chunk({ choices: [], usage: { prompt_tokens: 10, completion_tokens: 400 } });
    res.end('data: [DONE]\n\n');
  }, 50);
  res.on('close', () => {
    if (n < 200) providerCutOff = true;
    clearInterval(timer);
  });
}

beforeAll(async () => {
  stub = await new StubProvider().start();
  stub.handler = (_req, res) => slowStream(res);
  app = await startTestApp({ workers: true, env: { CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true' } });
  mock = await setUpInvoking(app.http, { models: ['mock-stream-20'] });
  mockKey = (await mintKey(app.http, mock.org.adminKey, ['invoke'])).key;
  stubbed = await setUpInvoking(app.http, { baseUrl: stub.url, models: ['stub-model'] });
  stubKey = (await mintKey(app.http, stubbed.org.adminKey, ['invoke'])).key;
}, 60_000);
afterAll(async () => {
  await app.close();
  await stub.stop();
});

async function drain(stream: AsyncIterable<OpenAI.ChatCompletionChunk>): Promise<string> {
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
  return text;
}

it('40 concurrent streams into a session that fits 20: exactly 20 complete, the rest refused, nothing left reserved', async () => {
  const session = await openSession(app.http, mock.org.adminKey, {
    agent_id: mock.agentId,
    max_cost_usd: 1,
    max_calls: 20,
  });
  const client = clientFor(mockKey, session.id);
  const outcomes = await Promise.all(
    Array.from({ length: 40 }, async (_, i) => {
      try {
        const stream = await client.chat.completions.create({
          model: 'mock-stream-20',
          messages: [{ role: 'user', content: `stream number ${i}` }],
          max_tokens: 32,
          stream: true,
        });
        return (await drain(stream)) === `mock reply to: stream number ${i}` ? 'complete' : 'partial';
      } catch (err) {
        return err instanceof OpenAI.APIError ? `${err.status} ${String(err.code)}` : String(err);
      }
    }),
  );
  expect(outcomes.filter((o) => o === 'complete')).toHaveLength(20);
  expect(outcomes.filter((o) => o !== 'complete').every((o) => o === '402 budget_exceeded')).toBe(true);
  const live = await app.http.get<{ usage: { calls: number; reserved_usd: number; cost_usd: number } }>(
    `/v1/sessions/${session.id}`,
    mock.org.adminKey,
  );
  expect(live.body.usage).toMatchObject({ calls: 20, reserved_usd: 0 });
  expect(live.body.usage.cost_usd).toBeLessThanOrEqual(1);
});

it('a client that hangs up mid-stream stops the provider call and is charged what arrived, not the reservation', async () => {
  const session = await openSession(app.http, stubbed.org.adminKey, {
    agent_id: stubbed.agentId,
    max_cost_usd: 1,
  });
  const hangUp = new AbortController();
  const { data: stream, response } = await clientFor(stubKey, session.id)
    .chat.completions.create(
      { model: 'stub-model', messages: [{ role: 'user', content: 'talk' }], max_tokens: 1000, stream: true },
      { signal: hangUp.signal },
    )
    .withResponse();
  const invocationId = response.headers.get('x-invocation-id') as string;
  let pieces = 0;
  // The SDK ends the iteration (or throws its abort error) once the request is aborted.
  await (async () => {
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content && ++pieces === 3) hangUp.abort();
    }
  })().catch((err: unknown) => expect(err).toBeInstanceOf(OpenAI.APIUserAbortError));
  expect(pieces).toBe(3);
  await eventually(() => providerCutOff, 10_000);
  const done = await finished(app.http, stubKey, invocationId);
  expect(done.status).toBe('failed');
  expect(done.error?.error_code).toBe('provider_aborted');
  // The whole prompt and one token per byte that arrived: far below the 1000-token reservation.
  expect(done.usage?.output_tokens).toBeGreaterThan(0);
  expect(done.usage?.output_tokens).toBeLessThan(1000);
  expect(done.cost_usd).toBeGreaterThan(0);
  // The row reads as finished a moment before its reservation is settled in Redis.
  const usage = await eventually(async () => {
    const live = await app.http.get<{ usage: { reserved_usd: number; cost_usd: number } }>(
      `/v1/sessions/${session.id}`,
      stubbed.org.adminKey,
    );
    return live.body.usage.reserved_usd === 0 ? live.body.usage : null;
  });
  expect(usage.cost_usd).toBe(done.cost_usd);
});
