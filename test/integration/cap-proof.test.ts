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
import { StubProvider } from '../support/stub-provider';
import { startTestApp, type TestApp } from '../support/test-app';
import { TEST_REDIS_URL } from '../support/test-db';
import { startWorkerProcesses, type WorkerProcess } from '../support/worker-process';

/**
 * THE CAP PROOF: 200 concurrent invokes on one session, run by two worker processes, never
 * settle more than the session's cap, for each of the three caps; the provider is called exactly
 * as often as invocations succeed; and no reservation is left afterwards.
 */
const CONCURRENT = 200;
const MESSAGES: ChatMessage[] = [{ role: 'user', content: 'x'.repeat(100) }];
const MAX_TOKENS = 24;
/** The stub reports exactly the worst case, so every success costs exactly what it reserved. */
const WORST_TOKENS = inputTokenBound(MESSAGES) + MAX_TOKENS; // 176 + 24 = 200
const WORST_MICROS = inputTokenBound(MESSAGES) * 1 + MAX_TOKENS * 2; // at 1 and 2 USD per Mtok: 224

let app: TestApp;
let stub: StubProvider;
let setup: InvokeSetup;
let workers: WorkerProcess[] = [];
const callsPerModel = new Map<string, number>();

beforeAll(async () => {
  stub = await new StubProvider().start();
  stub.handler = (req, res) => {
    const body = req.body as { model: string; messages: ChatMessage[]; max_tokens: number };
    callsPerModel.set(body.model, (callsPerModel.get(body.model) ?? 0) + 1);
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        choices: [{ message: { role: 'assistant', content: 'ok' } }],
        usage: { prompt_tokens: inputTokenBound(body.messages), completion_tokens: body.max_tokens },
      }),
    );
  };
  app = await startTestApp({ env: { CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true' } });
  setup = await setUpInvoking(app.http, {
    baseUrl: stub.url,
    models: ['cap-cost', 'cap-calls', 'cap-tokens'],
    price: { input: 1, output: 2 },
  });
  const env = { DATABASE_URL: app.db.url, REDIS_URL: TEST_REDIS_URL, CP_REDIS_PREFIX: app.prefix };
  workers = await startWorkerProcesses(env, 2);
}, 60_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await app.close();
  await stub.stop();
});

interface Round {
  session: { id: string };
  invocations: InvocationBody[];
  refusedAtTheDoor: number;
}

/** Fires CONCURRENT invokes at once, then waits for every one to finish. */
async function storm(model: string, limits: Record<string, unknown>): Promise<Round> {
  const session = await openSession(app.http, setup.org.adminKey, { agent_id: setup.agentId, ...limits });
  const answers = await Promise.all(
    Array.from({ length: CONCURRENT }, () =>
      app.http.post<InvocationBody>(
        '/v1/llm/invoke',
        { session_id: session.id, model, messages: MESSAGES, max_tokens: MAX_TOKENS },
        setup.org.adminKey,
      ),
    ),
  );
  // A request that arrives once the cap is already reached is refused before anything is written.
  const refusedAtTheDoor = answers.filter((a) => a.status === 402).length;
  expect(answers.every((a) => [200, 202, 402].includes(a.status))).toBe(true);
  const admitted = answers.filter((a) => a.status !== 402).map((a) => a.body.id);
  const invocations = await Promise.all(
    admitted.map((id) => finished(app.http, setup.org.adminKey, id, 60_000)),
  );
  return { session, invocations, refusedAtTheDoor };
}

interface Usage {
  cost_usd: number;
  reserved_usd: number;
  calls: number;
  input_tokens: number;
  output_tokens: number;
}

async function settled(sessionId: string): Promise<Usage> {
  const res = await app.http.get<{ usage: Usage }>(`/v1/sessions/${sessionId}`, setup.org.adminKey);
  return res.body.usage;
}

/**
 * Nothing held in Redis for the session: no reserved totals, no reservation entries, no leases.
 * An invocation reads as finished once PostgreSQL has its outcome; its reservation is settled (and
 * its lease dropped) right after, so the last of them may still be landing: wait a moment for it.
 */
async function expectNothingHeld(sessionId: string): Promise<void> {
  const base = `${app.prefix}:cap:{${sessionId}}`;
  const redis = app.infra.redis;
  const held = async () => ({
    reserved: await redis.hmget(base, 'cr', 'kr', 'tr'),
    entries: await redis.hlen(`${base}:res`),
    leases: (await redis.zrange(`${app.prefix}:cap:leases`, 0, -1)).filter((l) =>
      l.startsWith(`${sessionId} `),
    ),
  });
  const none = { reserved: ['0', '0', '0'], entries: 0, leases: [] };
  await eventually(async () => JSON.stringify(await held()) === JSON.stringify(none), 2_000).catch(
    () => null,
  );
  expect(await held()).toEqual(none);
  expect((await settled(sessionId)).reserved_usd).toBe(0);
}

function expectOutcomes(round: Round, model: string, succeededExpected: number): InvocationBody[] {
  const succeeded = round.invocations.filter((i) => i.status === 'succeeded');
  const failed = round.invocations.filter((i) => i.status !== 'succeeded');
  expect(succeeded).toHaveLength(succeededExpected);
  expect(failed.every((i) => i.status === 'failed' && i.error?.error_code === 'budget_exceeded')).toBe(true);
  expect(succeeded.length + failed.length + round.refusedAtTheDoor).toBe(CONCURRENT);
  // The provider was called exactly once per success: refusals never reached it.
  expect(callsPerModel.get(model)).toBe(succeeded.length);
  return succeeded;
}

describe('the cap proof: 200 concurrent invokes on one session, two worker processes', () => {
  it('never settles more than the cost cap', async () => {
    const capMicros = 5000; // fits 22 calls of 224
    const round = await storm('cap-cost', { max_cost_usd: capMicros / 1e6 });
    const succeeded = expectOutcomes(round, 'cap-cost', Math.floor(capMicros / WORST_MICROS));
    const usage = await settled(round.session.id);
    expect(Math.round(usage.cost_usd * 1e6)).toBe(succeeded.length * WORST_MICROS);
    expect(usage.cost_usd).toBeLessThanOrEqual(capMicros / 1e6);
    await expectNothingHeld(round.session.id);
  });

  it('never settles more calls than max_calls', async () => {
    const round = await storm('cap-calls', { max_cost_usd: 100, max_calls: 17 });
    expectOutcomes(round, 'cap-calls', 17);
    expect((await settled(round.session.id)).calls).toBe(17);
    await expectNothingHeld(round.session.id);
  });

  it('never settles more tokens than max_tokens', async () => {
    const round = await storm('cap-tokens', { max_cost_usd: 100, max_tokens: 10 * WORST_TOKENS + 199 });
    expectOutcomes(round, 'cap-tokens', 10);
    const usage = await settled(round.session.id);
    expect(usage.input_tokens + usage.output_tokens).toBe(10 * WORST_TOKENS);
    await expectNothingHeld(round.session.id);
  });

  it('ran the invocations in both worker processes', () => {
    for (const worker of workers) expect(worker.output()).toMatch(/"msg":"invocation run"/);
  });
});
