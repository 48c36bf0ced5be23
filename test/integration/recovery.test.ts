import type { ServerResponse } from 'node:http';
import { UnrecoverableError, Worker } from 'bullmq';
import { submitJobId } from '../../domain/jobs';
import { outcomeWrite } from '../../domain/invocations/outcomes';
import { reapInvocations } from '../../domain/invocations/reap-invocations';
import { bullConnectionOptions } from '../../infra/redis/connections';
import { evaluateProcessor } from '../../workers/invocation-processors';
import {
  eventually,
  finished,
  invoke,
  openSession,
  setUpInvoking,
  type InvocationBody,
  type InvokeSetup,
} from '../support/invoke-fixtures';
import { mintKey } from '../support/factories';
import { reapDepsOf } from '../support/reap-deps';
import { StubProvider } from '../support/stub-provider';
import { startTestApp, type TestApp } from '../support/test-app';
import { TEST_REDIS_URL } from '../support/test-db';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

/** The API only: workers are started (and killed) by each test. */
let app: TestApp;
let stub: StubProvider;
let setup: InvokeSetup;
const held: ServerResponse[] = [];
let holdNext = false;

const USAGE = { prompt_tokens: 40, completion_tokens: 10 }; // at 1 and 2 USD per Mtok: 60 micro-dollars
const answerNow = (res: ServerResponse) =>
  res
    .writeHead(200, { 'content-type': 'application/json' })
    .end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: 'ok' } }], usage: USAGE }));

beforeAll(async () => {
  stub = await new StubProvider().start();
  stub.handler = (_req, res) => {
    if (!holdNext) return answerNow(res);
    holdNext = false;
    held.push(res); // never answered: the worker calling is about to die
  };
  app = await startTestApp({ env: { CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true' } });
  setup = await setUpInvoking(app.http, {
    baseUrl: stub.url,
    models: ['stub-model'],
    price: { input: 1, output: 2 },
  });
});
afterAll(async () => {
  for (const res of held) res.destroy();
  await app.close();
  await stub.stop();
});

const workerEnv = () => ({
  DATABASE_URL: app.db.url,
  REDIS_URL: TEST_REDIS_URL,
  CP_REDIS_PREFIX: app.prefix,
  // A dead worker's jobs are taken over after about a second, not the default 30 s.
  CP_JOB_LOCK_MS: '1000',
});

const body = (sessionId: string) => ({
  session_id: sessionId,
  model: 'stub-model',
  messages: [{ role: 'user', content: 'hello' }],
  max_tokens: 10,
});

const newSession = () =>
  openSession(app.http, setup.org.adminKey, { agent_id: setup.agentId, max_cost_usd: 1 });

async function usageOf(sessionId: string) {
  return (
    await app.http.get<{ usage: Record<string, number> }>(`/v1/sessions/${sessionId}`, setup.org.adminKey)
  ).body.usage;
}

const reservations = (sessionId: string) => app.infra.redis.hlen(`${app.prefix}:cap:{${sessionId}}:res`);

describe('a worker killed with SIGKILL in the middle of a provider call', () => {
  let first: WorkerProcess | undefined;
  let second: WorkerProcess | undefined;
  afterAll(async () => {
    await first?.kill();
    await second?.stop();
  });

  it('charges the call at its reservation and never calls the provider again once another worker takes over', async () => {
    const session = await newSession();
    first = await startWorkerProcess(workerEnv());
    holdNext = true;
    const before = stub.requests.length;
    const accepted = await invoke(app.http, setup.org.adminKey, body(session.id), 0);
    // The first worker reserved and is now inside the provider call.
    await eventually(async () => stub.requests.length > before);
    expect(await reservations(session.id)).toBe(1);
    await first.kill();

    second = await startWorkerProcess(workerEnv());
    const done = await finished(app.http, setup.org.adminKey, accepted.body.id, 30_000);
    // The provider may have answered (and billed) the first call: it is charged, never repeated.
    expect(done).toMatchObject({
      status: 'failed',
      error: { error_code: 'provider_outcome_unknown' },
      usage: { input_tokens: 81, output_tokens: 10 },
      cost_usd: 0.000101,
    });
    expect(stub.requests.length - before).toBe(1);
    expect(await usageOf(session.id)).toEqual({
      cost_usd: 0.000101,
      reserved_usd: 0,
      calls: 1,
      input_tokens: 81,
      output_tokens: 10,
    });
    expect(await reservations(session.id)).toBe(0);
    const audit = await app.http.get<{ data: unknown[] }>(
      `/v1/audit?resource_id=${accepted.body.id}&action=llm.invoke.failed`,
      setup.org.adminKey,
    );
    expect(audit.body.data).toHaveLength(1);
  }, 60_000);
});

describe('the reaper', () => {
  const deps = () => reapDepsOf(app);

  /** The worker's first step: take the reservation (restoring the session's ledger state first). */
  async function reserve(sessionId: string, invocationId: string) {
    const snapshot = await app.infra.invocations.capSnapshot(sessionId);
    await app.infra.ledger.restore(snapshot as NonNullable<typeof snapshot>);
    const amounts = { costMicros: 101, calls: 1, tokens: 91 };
    expect(await app.infra.ledger.reserve(sessionId, invocationId, amounts)).toEqual({ kind: 'reserved' });
    return amounts;
  }

  /**
   * Runs the guardian stage in this process, as a guardian job would: the invocation is then
   * `running`, its invoke job waits, and the submit's job (no worker took it) is gone.
   */
  async function admitted(sessionId: string, key = setup.org.adminKey): Promise<InvocationBody> {
    const queued = await invoke(app.http, key, body(sessionId), 0);
    await app.infra.queues.queue('invoke').remove(submitJobId(queued.body.id));
    await evaluateProcessor({ invocation_id: queued.body.id, org_id: setup.org.orgId, trace: {} }, app.infra);
    const job = await app.infra.queues.queue('invoke').getJob(queued.body.id);
    expect(job?.name).toBe('invocation.run');
    return queued.body;
  }

  /** A worker that died after recording its result (PostgreSQL first), before it settled in Redis. */
  async function recordedUnsettled(sessionId: string) {
    const invocation = await admitted(sessionId);
    await app.infra.queues.queue('invoke').remove(invocation.id);
    const amounts = await reserve(sessionId, invocation.id);
    const row = (await app.infra.invocations.getMany([invocation.id]))[0];
    const write = outcomeWrite(
      row as NonNullable<typeof row>,
      {
        from: ['running'],
        status: 'succeeded',
        output: { role: 'assistant', content: 'ok' },
        error: null,
        charge: {
          amounts: { costMicros: 60, calls: 1, tokens: 50 },
          usage: { inputTokens: 40, outputTokens: 10 },
        },
        providerAttempt: 1,
      },
      new Date(),
    );
    expect(await app.infra.invocations.finish(write)).toBe('applied');
    return { invocation, amounts };
  }

  it('settles a reservation left by a worker that died after recording its result', async () => {
    const session = await newSession();
    const { invocation, amounts } = await recordedUnsettled(session.id);
    // 'hello' bounds the input at 5 + 4 + 8 + 64 = 81 tokens; with 10 output: 81 x 1 + 10 x 2 micro-dollars.
    expect((await usageOf(session.id)).reserved_usd).toBe(0.000101);

    const report = await reapInvocations(deps());
    expect(report.released).toBeGreaterThanOrEqual(1);
    expect(await reservations(session.id)).toBe(0);
    const usage = await usageOf(session.id);
    expect(usage).toMatchObject({ reserved_usd: 0, cost_usd: 0.00006, calls: 1 });
    const [cost, calls, tokens] = await app.infra.redis.hmget(
      `${app.prefix}:cap:{${session.id}}`,
      'cs',
      'ks',
      'ts',
    );
    expect([cost, calls, tokens]).toEqual(['60', '1', '50']);
    // Settling is idempotent: a late worker settling too changes nothing.
    expect(await app.infra.ledger.settle(session.id, invocation.id, amounts)).toBe('already_settled');
  });

  it('settles the leftovers after one the ledger refuses, and says which it could not settle', async () => {
    const [refused, next] = [await newSession(), await newSession()];
    await recordedUnsettled(refused.id);
    await recordedUnsettled(next.id);
    const ledger = Object.create(app.infra.ledger) as typeof app.infra.ledger;
    ledger.settle = async (sessionId, chargeId, amounts) => {
      if (sessionId === refused.id) throw new Error('ERR value is not an integer or out of range');
      return app.infra.ledger.settle(sessionId, chargeId, amounts);
    };
    const warnings: Record<string, unknown>[] = [];
    const report = await reapInvocations({ ...deps(), ledger, warn: (_m, fields) => warnings.push(fields) });
    expect(report.released).toBeGreaterThanOrEqual(1);
    expect(await reservations(next.id)).toBe(0);
    expect(await reservations(refused.id)).toBe(1);
    expect(warnings).toContainEqual(expect.objectContaining({ session_id: refused.id }));
    // The next reap, with the ledger answering again, settles it.
    await reapInvocations(deps());
    expect(await reservations(refused.id)).toBe(0);
  });

  it('enqueues again a running invocation whose job Redis lost, and a worker finishes it', async () => {
    const session = await newSession();
    const invocation = await admitted(session.id);
    await app.infra.queues.queue('invoke').remove(invocation.id);
    await app.infra
      .knex('invocations')
      .where({ id: invocation.id })
      .update({ updated_at: new Date(Date.now() - 60_000) });
    const report = await reapInvocations(deps());
    expect(report.requeued).toBeGreaterThanOrEqual(1);
    const worker = await startWorkerProcess(workerEnv());
    try {
      const done = await finished(app.http, setup.org.adminKey, invocation.id, 30_000);
      expect(done.status).toBe('succeeded');
      expect((await usageOf(session.id)).calls).toBe(1);
    } finally {
      await worker.stop();
    }
  }, 60_000);

  it('checks a requeued invocation again before its call: a key revoked or a session closed meanwhile stops it', async () => {
    const scopes = ['llm:invoke', 'sessions:write', 'sessions:read'];
    const agentKey = await mintKey(app.http, setup.org.adminKey, scopes, 'revoked while its job was lost');
    const revokedSession = await openSession(app.http, agentKey.key, {
      agent_id: setup.agentId,
      max_cost_usd: 1,
    });
    const closedSession = await newSession();
    const revoked = await admitted(revokedSession.id, agentKey.key);
    const closed = await admitted(closedSession.id);
    for (const { id } of [revoked, closed]) await app.infra.queues.queue('invoke').remove(id);
    await app.http.call('DELETE', `/v1/keys/${agentKey.id}`, { token: setup.org.adminKey });
    await app.http.post(`/v1/sessions/${closedSession.id}/close`, {}, setup.org.adminKey);
    await app.infra
      .knex('invocations')
      .whereIn('id', [revoked.id, closed.id])
      .update({ updated_at: new Date(Date.now() - 60_000) });
    const calls = stub.requests.length;
    expect((await reapInvocations(deps())).requeued).toBeGreaterThanOrEqual(2);
    const worker = await startWorkerProcess(workerEnv());
    try {
      const admin = setup.org.adminKey;
      expect(await finished(app.http, admin, revoked.id, 30_000)).toMatchObject({
        status: 'failed',
        error: { error_code: 'invalid_api_key', message: expect.stringContaining('it was not run') },
      });
      expect(await finished(app.http, admin, closed.id, 30_000)).toMatchObject({
        status: 'failed',
        error: { error_code: 'session_not_open' },
      });
    } finally {
      await worker.stop();
    }
    expect(stub.requests.length).toBe(calls);
    for (const session of [revokedSession, closedSession])
      expect(await usageOf(session.id)).toMatchObject({ reserved_usd: 0, cost_usd: 0, calls: 0 });
  }, 60_000);

  /** A worker whose every attempt blows up: the job ends failed and the invocation is left running. */
  async function endJobUnfinished(invocationId: string) {
    const broken = new Worker(
      'invoke',
      async () => {
        throw new UnrecoverableError('boom');
      },
      { connection: bullConnectionOptions(TEST_REDIS_URL), prefix: app.infra.queues.bullPrefix },
    );
    try {
      await eventually(
        async () => (await app.infra.queues.stages.state('invocation.run', invocationId)) === 'ended',
      );
    } finally {
      await broken.close();
    }
    await app.infra
      .knex('invocations')
      .where({ id: invocationId })
      .update({ updated_at: new Date(Date.now() - 60_000) });
  }

  const lost = async (invocationId: string) =>
    (await app.http.get<InvocationBody>(`/v1/llm/invocations/${invocationId}`, setup.org.adminKey)).body;

  it('fails an invocation whose job ended holding a reservation, charging the reservation', async () => {
    const session = await newSession();
    const invocation = await admitted(session.id);
    await reserve(session.id, invocation.id);
    await endJobUnfinished(invocation.id);
    const report = await reapInvocations(deps());
    expect(report.failed).toBeGreaterThanOrEqual(1);
    // The reservation was taken, so the provider may have been called (and may bill it).
    expect(await lost(invocation.id)).toMatchObject({
      status: 'failed',
      error: { error_code: 'worker_lost' },
      cost_usd: 0.000101,
    });
    expect(await reservations(session.id)).toBe(0);
    expect(await usageOf(session.id)).toMatchObject({ reserved_usd: 0, cost_usd: 0.000101, calls: 1 });
  });

  it('fails an invocation whose job ended before reserving, charging nothing', async () => {
    const session = await newSession();
    const invocation = await admitted(session.id);
    const snapshot = await app.infra.invocations.capSnapshot(session.id);
    await app.infra.ledger.restore(snapshot as NonNullable<typeof snapshot>);
    // The restore holds the next attempt unconfirmed; a worker that never ran never confirmed it.
    await app.infra.ledger.settle(session.id, invocation.id, { costMicros: 0, calls: 0, tokens: 0 });
    await endJobUnfinished(invocation.id);
    const report = await reapInvocations(deps());
    expect(report.failed).toBeGreaterThanOrEqual(1);
    expect(await lost(invocation.id)).toMatchObject({
      status: 'failed',
      error: { error_code: 'worker_lost' },
      cost_usd: 0,
    });
    expect(await usageOf(session.id)).toMatchObject({ reserved_usd: 0, cost_usd: 0, calls: 0 });
  });
});

describe('a rolling upgrade', () => {
  it("runs at once an invocation whose submit job an older API enqueued under the invocation's own id", async () => {
    const session = await newSession();
    const queued = await invoke(app.http, setup.org.adminKey, body(session.id), 0);
    // What an API from before the submit's job had an id of its own left in Redis.
    const invokeQueue = app.infra.queues.queue('invoke');
    await invokeQueue.remove(submitJobId(queued.body.id));
    const payload = { invocation_id: queued.body.id, org_id: setup.org.orgId, trace: {} };
    await invokeQueue.add('invocation.run', payload, { jobId: queued.body.id, removeOnComplete: true });
    const worker = await startWorkerProcess(workerEnv());
    try {
      // Well before the reaper (CP_REAP_AFTER_MS, 60 s by default) would take it up.
      const done = await finished(app.http, setup.org.adminKey, queued.body.id, 15_000);
      expect(done).toMatchObject({ status: 'succeeded', decision: { verdict: 'allow' } });
      expect((await usageOf(session.id)).calls).toBe(1);
    } finally {
      await worker.stop();
    }
  }, 60_000);
});
