import type { ServerResponse } from 'node:http';
import { inputTokenBound } from '../../domain/pricing/cost';
import type { ChatMessage } from '../../domain/providers';
import {
  eventually,
  finished,
  openSession,
  setUpInvoking,
  type InvocationBody,
  type InvokeSetup,
} from '../support/invoke-fixtures';
import { RedisServer } from '../support/redis-server';
import { StubProvider } from '../support/stub-provider';
import { startTestApp, type TestApp } from '../support/test-app';

/**
 * Redis restarted empty (no persistence) while a session is open and calls are in flight: the
 * ledger is rebuilt from PostgreSQL's settled usage and in-flight invocations, and the cap holds.
 */
const MESSAGES: ChatMessage[] = [{ role: 'user', content: 'x'.repeat(100) }];
const MAX_TOKENS = 24;
const WORST_MICROS = inputTokenBound(MESSAGES) + MAX_TOKENS * 2; // 224 at 1 and 2 USD per Mtok
const CAP_MICROS = 5000; // 22 calls

let redis: RedisServer;
let app: TestApp;
let stub: StubProvider;
let setup: InvokeSetup;
let holding = 0;
const held: (() => void)[] = [];

beforeAll(async () => {
  redis = await RedisServer.start();
  stub = await new StubProvider().start();
  stub.handler = (req, res: ServerResponse) => {
    const body = req.body as { messages: ChatMessage[]; max_tokens: number };
    const reply = () =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          choices: [{ message: { role: 'assistant', content: 'ok' } }],
          usage: { prompt_tokens: inputTokenBound(body.messages), completion_tokens: body.max_tokens },
        }),
      );
    if (holding > 0) {
      holding--;
      held.push(reply);
    } else reply();
  };
  app = await startTestApp({
    workers: true,
    redisUrl: redis.url,
    env: { CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true' },
  });
  setup = await setUpInvoking(app.http, { baseUrl: stub.url, models: ['m'], price: { input: 1, output: 2 } });
}, 30_000);

afterAll(async () => {
  held.forEach((reply) => reply());
  await app.close();
  await stub.stop();
  await redis.stop();
});

const post = (sessionId: string) =>
  app.http.post<InvocationBody>(
    '/v1/llm/invoke',
    { session_id: sessionId, model: 'm', messages: MESSAGES, max_tokens: MAX_TOKENS },
    setup.org.adminKey,
  );

describe('Redis lost while a session is open', () => {
  it('rebuilds the cap state from PostgreSQL and the cap still holds', async () => {
    const session = await openSession(app.http, setup.org.adminKey, {
      agent_id: setup.agentId,
      max_cost_usd: CAP_MICROS / 1e6,
    });
    for (let i = 0; i < 10; i++) {
      const res = await post(session.id);
      expect((await finished(app.http, setup.org.adminKey, res.body.id)).status).toBe('succeeded');
    }
    // Five more reserve and reach the provider, which holds them.
    holding = 5;
    const inFlight = await Promise.all(Array.from({ length: 5 }, () => post(session.id)));
    await eventually(async () => held.length === 5);

    await redis.kill();
    await redis.start(); // empty: no persistence
    await eventually(async () => (await app.http.get('/ready')).status === 200);
    expect(await app.infra.redis.exists(`${app.prefix}:cap:{${session.id}}`)).toBe(0);

    // A storm after the loss, while the five are still in flight.
    const storm = await Promise.all(Array.from({ length: 50 }, () => post(session.id)));
    expect(storm.filter((r) => ![200, 202, 402].includes(r.status)).map((r) => r.body)).toEqual([]);
    const admitted = storm.filter((r) => r.status !== 402).map((r) => r.body.id);
    const outcomes = await Promise.all(
      admitted.map((id) => finished(app.http, setup.org.adminKey, id, 30_000)),
    );
    held.splice(0).forEach((reply) => reply());
    const flights = await Promise.all(
      inFlight.map((r) => finished(app.http, setup.org.adminKey, r.body.id, 30_000)),
    );

    const succeeded = [...outcomes, ...flights].filter((i) => i.status === 'succeeded').length + 10;
    expect(succeeded).toBe(Math.floor(CAP_MICROS / WORST_MICROS));
    expect(flights.every((f) => f.status === 'succeeded')).toBe(true);
    const usage = (
      await app.http.get<{ usage: { cost_usd: number } }>(`/v1/sessions/${session.id}`, setup.org.adminKey)
    ).body.usage;
    expect(Math.round(usage.cost_usd * 1e6)).toBe(succeeded * WORST_MICROS);
    expect(usage.cost_usd).toBeLessThanOrEqual(CAP_MICROS / 1e6);
    // The rebuilt ledger agrees with PostgreSQL and holds nothing.
    await eventually(async () => {
      const [spent, reserved] = await app.infra.redis.hmget(`${app.prefix}:cap:{${session.id}}`, 'cs', 'cr');
      return reserved === '0' && Number(spent) <= CAP_MICROS;
    });
  }, 60_000);
});
