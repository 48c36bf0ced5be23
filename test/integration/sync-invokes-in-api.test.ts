import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { submitJobId } from '../../domain/jobs';
import { reapInvocations } from '../../domain/invocations/reap-invocations';
import { startWorkers, type RunningWorkers } from '../../workers/start-workers';
import { SyncRuns } from '../../workers/sync-runs';
import { HttpClient } from '../support/http-client';
import {
  eventually,
  finished,
  invoke,
  invokeBody,
  openSession,
  setUpInvoking,
  type InvokeSetup,
} from '../support/invoke-fixtures';
import { parsePrometheusText, valueOf } from '../support/prometheus-text';
import { reapDepsOf } from '../support/reap-deps';
import { listeningUrl } from '../support/service-process';
import { answerChat, StubProvider, type RecordedRequest } from '../support/stub-provider';
import { startTestApp, type TestApp } from '../support/test-app';
import { TEST_REDIS_URL } from '../support/test-db';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

/**
 * CP_SYNC_INVOKES_IN_API: an invoke whose client waits runs in the API process that took it, with
 * no worker and no job, and loses nothing the queue gives a job: room per process and per org,
 * retries, the reaper's recovery after a crash. The app runs no workers unless a test starts them.
 */
let app: TestApp;
let stub: StubProvider;
let setup: InvokeSetup;
let other: InvokeSetup;
const held: ServerResponse[] = [];

const SYNC_ENV = {
  CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true',
  CP_SYNC_INVOKES_IN_API: 'true',
  CP_INVOKE_CONCURRENCY: '3',
  CP_INVOKE_ORG_CONCURRENCY: '2',
  CP_INVOKE_BACKOFF_MS: '10',
  CP_SYNC_INVOKE_ROOM_WAIT_MS: '3000',
  // Leases renewed every 5 s: a run must be leased from its start, not from the first renewal.
  CP_REAP_AFTER_MS: '60000',
};

const contentOf = (req: RecordedRequest): string =>
  String((req.body as { messages?: { content?: unknown }[] }).messages?.[0]?.content ?? '');

/** The stub holds calls whose prompt starts with "hold", fails those with "fail" (503), answers the rest. */
function answer(req: RecordedRequest, res: ServerResponse): void {
  const content = contentOf(req);
  if (content.startsWith('hold')) held.push(res);
  else if (content.startsWith('fail')) res.writeHead(503, { 'content-type': 'application/json' }).end('{}');
  else answerChat(res, 'ok');
}

const callsWith = (content: string) => stub.requests.filter((r) => contentOf(r) === content).length;

const body = (sessionId: string, content: string) =>
  invokeBody(sessionId, { model: 'stub-model', messages: [{ role: 'user', content }] });

const jobState = (invocationId: string) =>
  app.infra.queues.queue('invoke').getJobState(submitJobId(invocationId));

async function metric(outcome: string): Promise<number> {
  const samples = parsePrometheusText(await app.infra.metrics.scrape());
  return valueOf(samples, 'cp_sync_invokes_in_api_total', { outcome }) ?? 0;
}

const newSession = (s: InvokeSetup = setup) =>
  openSession(app.http, s.org.adminKey, { agent_id: s.agentId, max_cost_usd: 1 });

const usageOf = async (sessionId: string) =>
  (await app.http.get<{ usage: Record<string, number> }>(`/v1/sessions/${sessionId}`, setup.org.adminKey))
    .body.usage;

// Reservations of runs in flight are their runs' business: only stuck invocations are looked at.
const reapDeps = () => reapDepsOf(app, 60_000);

beforeAll(async () => {
  stub = await new StubProvider().start();
  stub.handler = answer;
  app = await startTestApp({ env: SYNC_ENV });
  setup = await setUpInvoking(app.http, { baseUrl: stub.url, models: ['stub-model'] });
  other = await setUpInvoking(app.http, { baseUrl: stub.url, models: ['stub-model'] });
}, 60_000);
afterAll(async () => {
  for (const res of held.splice(0)) res.destroy();
  await app.close();
  await stub.stop();
});

const releaseHeld = () => {
  for (const res of held.splice(0)) answerChat(res, 'late');
};

it('a sync invoke runs in the API that took it: no worker, no job, usage exact', async () => {
  const ranBefore = await metric('ran');
  const session = await newSession();
  const res = await invoke(app.http, setup.org.adminKey, body(session.id, 'here'), 5);
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ status: 'succeeded', output: { content: 'ok' }, cost_usd: 0.000007 });
  expect(await jobState(res.body.id)).toBe('unknown');
  // Counted once the run returns, which may be just after its client was answered.
  await eventually(async () => (await metric('ran')) === ranBefore + 1);
  expect(await usageOf(session.id)).toEqual({
    cost_usd: 0.000007,
    reserved_usd: 0,
    calls: 1,
    input_tokens: 5,
    output_tokens: 1,
  });
});

it('an invoke whose client does not wait goes to the queue, as before', async () => {
  const session = await newSession();
  const res = await invoke(app.http, setup.org.adminKey, body(session.id, 'queued'), 0);
  expect(res.status).toBe(202);
  expect(await jobState(res.body.id)).toBe('waiting');
  expect(callsWith('queued')).toBe(0);
});

it("past its org's share of the process for its whole wait, a sync invoke is queued; another org's runs here", async () => {
  const queuedBefore = await metric('queued');
  const session = await newSession();
  const slow = await Promise.all(
    ['hold 1', 'hold 2'].map((c) => invoke(app.http, setup.org.adminKey, body(session.id, c), 1)),
  );
  expect(slow.map((r) => r.status)).toEqual([202, 202]);
  expect(held).toHaveLength(2);
  const third = await invoke(app.http, setup.org.adminKey, body(session.id, 'over the share'), 1);
  expect(third.status).toBe(202);
  expect(await jobState(third.body.id)).toBe('waiting');
  expect(await metric('queued')).toBe(queuedBefore + 1);

  const otherSession = await newSession(other);
  const beside = await invoke(app.http, other.org.adminKey, body(otherSession.id, 'beside'), 5);
  expect(beside.body.status).toBe('succeeded');
  expect(await jobState(beside.body.id)).toBe('unknown');

  releaseHeld();
  for (const r of slow)
    expect((await finished(app.http, setup.org.adminKey, r.body.id)).status).toBe('succeeded');
});

it('past its share, a sync invoke waits for room and runs here when a run ends within the wait', async () => {
  const runs = app.infra.syncRuns as SyncRuns;
  const session = await newSession();
  const slow = await Promise.all(
    ['hold a', 'hold b'].map((c) => invoke(app.http, setup.org.adminKey, body(session.id, c), 1)),
  );
  expect(held).toHaveLength(2);
  const started = Date.now();
  const third = invoke(app.http, setup.org.adminKey, body(session.id, 'waited for room'), 10);
  await eventually(() => runs.waitingForRoom === 1);
  expect(callsWith('waited for room')).toBe(0);
  releaseHeld();

  const res = await third;
  expect(res.body).toMatchObject({ status: 'succeeded', output: { content: 'ok' } });
  expect(await jobState(res.body.id)).toBe('unknown');
  expect(runs.waitingForRoom).toBe(0);
  expect(Date.now() - started).toBeLessThan(3000);
  for (const r of slow)
    expect((await finished(app.http, setup.org.adminKey, r.body.id)).status).toBe('succeeded');
});

it('the reaper leaves a run in the API alone from its start, while its lease lives', async () => {
  const session = await newSession();
  const answered = invoke(app.http, setup.org.adminKey, body(session.id, 'hold long'), 1);
  // In the provider call, long before the first renewal: a reaper set to look at once finds it leased.
  await eventually(() => callsWith('hold long') === 1);
  const report = await reapInvocations(reapDeps());
  const res = await answered;
  expect(res.status).toBe(202);
  expect(report).toMatchObject({ requeued: 0, failed: 0 });
  expect(await jobState(res.body.id)).toBe('unknown');
  releaseHeld();
  const done = await finished(app.http, setup.org.adminKey, res.body.id);
  expect(done).toMatchObject({ status: 'succeeded', output: { content: 'late' } });
  expect(callsWith('hold long')).toBe(1);
});

it('leases its runs again as soon as Redis is back, not a renewal later (QA)', async () => {
  const own = app.infra.syncRuns;
  // Renewals an hour apart: only the reconnection can lease the run again. Its connection's events
  // are a stand-in's: a real reconnection would fail the suite's other commands meanwhile.
  const connection = new EventEmitter();
  const runs = new SyncRuns({ ...app.infra, redis: connection as never }, 10, 3_600_000);
  app.infra.syncRuns = runs;
  try {
    const session = await newSession();
    const res = await invoke(app.http, setup.org.adminKey, body(session.id, 'hold outage'), 1);
    expect(res.status).toBe(202);
    expect(await app.infra.runClaims.held(res.body.id)).toBe(true);
    // The lease lapsed during an outage; the connection is ready again (as ioredis tells it).
    await app.infra.redis.del(`${app.prefix}:run:${res.body.id}`);
    connection.emit('ready');
    await eventually(() => app.infra.runClaims.held(res.body.id), 3_000);
    releaseHeld();
    expect((await finished(app.http, setup.org.adminKey, res.body.id)).status).toBe('succeeded');
  } finally {
    releaseHeld(); // else the close would wait for a held run
    await runs.close();
    app.infra.syncRuns = own;
  }
});

describe('with a worker', () => {
  let workers: RunningWorkers | undefined;
  afterEach(async () => {
    await workers?.close();
    workers = undefined;
  });

  it("a provider's retryable error hands the run to the queue with the attempts it left", async () => {
    const session = await newSession();
    const res = await invoke(app.http, setup.org.adminKey, body(session.id, 'fail'), 1);
    expect(res.status).toBe(202);
    const job = await eventually(() => app.infra.queues.queue('invoke').getJob(submitJobId(res.body.id)));
    expect(job.opts.attempts).toBe(2);
    expect(job.data.attempts_made).toBe(1);
    expect(callsWith('fail')).toBe(1);

    workers = await startWorkers(app.infra);
    const done = await finished(app.http, setup.org.adminKey, res.body.id);
    expect(done.status).toBe('failed');
    // CP_INVOKE_ATTEMPTS (3) in all: one in the API, two in the worker.
    expect(callsWith('fail')).toBe(3);
    expect((await usageOf(session.id)).reserved_usd).toBe(0);
  });

  it("a run the worker beside the API ends makes room for a sync invoke waiting there (npm start's one process)", async () => {
    workers = await startWorkers(app.infra);
    const runs = app.infra.syncRuns as SyncRuns;
    const session = await newSession();
    // Queued (no wait): the worker in this process runs both, holding the org's share (2).
    const queued = await Promise.all(
      ['hold w1', 'hold w2'].map((c) => invoke(app.http, setup.org.adminKey, body(session.id, c), 0)),
    );
    await eventually(() => callsWith('hold w1') + callsWith('hold w2') === 2);
    const waiting = invoke(app.http, setup.org.adminKey, body(session.id, 'after the worker'), 10);
    await eventually(() => runs.waitingForRoom === 1);
    const released = Date.now();
    releaseHeld();
    const res = await waiting;
    expect(res.body).toMatchObject({ status: 'succeeded', output: { content: 'ok' } });
    // Run here as the worker's share came free, not when the room wait (3 s) ran out.
    expect(Date.now() - released).toBeLessThan(2_000);
    expect(await jobState(res.body.id)).toBe('unknown');
    for (const r of queued)
      expect((await finished(app.http, setup.org.adminKey, r.body.id)).status).toBe('succeeded');
  });
});

/** A real API process (`--role api`) on the app's stores, with SYNC_ENV and `env` over it. */
const startApiProcess = (env: Record<string, string>) =>
  startWorkerProcess(
    {
      ...SYNC_ENV,
      DATABASE_URL: app.db.url,
      REDIS_URL: TEST_REDIS_URL,
      CP_REDIS_PREFIX: app.prefix,
      CP_RATE_LIMIT_PER_MINUTE: '100000',
      LOG_LEVEL: 'info',
      ...env,
    },
    30_000,
    'api',
  );

describe('an API process killed with SIGKILL in the middle of a provider call it runs', () => {
  let api: WorkerProcess | undefined;
  let workers: RunningWorkers | undefined;
  afterAll(async () => {
    await api?.kill();
    await workers?.close();
  });

  it('is recovered by the reaper once its lease lapses: charged at its reservation, never called again', async () => {
    // Leases of 3 s (renewed every second): a slow CI machine's kill cannot outlast one.
    api = await startApiProcess({ CP_REAP_AFTER_MS: '4000', CP_JOB_LOCK_MS: '1000' });
    const http = new HttpClient(listeningUrl(api.output()));
    const session = await newSession();
    const res = await invoke(http, setup.org.adminKey, body(session.id, 'hold crash'), 1);
    expect(res.status).toBe(202);
    await eventually(() => app.infra.runClaims.held(res.body.id));
    expect(callsWith('hold crash')).toBe(1);
    await api.kill();

    // Leased: left alone until the lease lapses, then enqueued as an invocation whose job is gone.
    expect((await reapInvocations(reapDeps())).requeued).toBe(0);
    await eventually(async () => !(await app.infra.runClaims.held(res.body.id)), 10_000);
    expect((await reapInvocations(reapDeps())).requeued).toBe(1);

    workers = await startWorkers(app.infra);
    const done = await finished(app.http, setup.org.adminKey, res.body.id);
    expect(done).toMatchObject({ status: 'failed', error: { error_code: 'provider_outcome_unknown' } });
    expect(callsWith('hold crash')).toBe(1);
    const usage = await usageOf(session.id);
    expect(usage).toMatchObject({ reserved_usd: 0, calls: 1, cost_usd: done.cost_usd });
    expect(done.cost_usd).toBeGreaterThan(0);
  }, 60_000);
});

describe('an API process stopped with SIGTERM while an invoke waits for room there', () => {
  let api: WorkerProcess | undefined;
  afterAll(async () => {
    releaseHeld();
    await api?.kill();
  });

  it('hands the waiting invoke to the queue at once, not once its requests have finished (QA)', async () => {
    api = await startApiProcess({ CP_SYNC_INVOKE_ROOM_WAIT_MS: '20000', CP_SHUTDOWN_TIMEOUT_MS: '30000' });
    const http = new HttpClient(listeningUrl(api.output()));
    const session = await newSession();
    const held = ['hold term 1', 'hold term 2'].map((c) =>
      invoke(http, setup.org.adminKey, body(session.id, c), 30),
    );
    await eventually(() => callsWith('hold term 1') + callsWith('hold term 2') === 2);
    const waiting = invoke(http, setup.org.adminKey, body(session.id, 'waiting at term'), 30);
    // Admitted and waiting for room (its row is not written until it is decided or queued).
    await new Promise((r) => setTimeout(r, 500));
    const stopped = api.stop(30_000);
    // Queued within seconds, while the held runs still hold the room the wait would have waited for.
    const queued = await eventually(async () => {
      const row = await app.infra
        .knex('invocations')
        .where({ session_id: session.id })
        .whereRaw(`request->'messages'->0->>'content' = ?`, ['waiting at term'])
        .first<{ id: string; status: string } | undefined>('id', 'status');
      return row && (await jobState(row.id)) === 'waiting' ? row : undefined;
    }, 5_000);
    expect(queued.status).toBe('queued');
    expect(callsWith('waiting at term')).toBe(0);
    // The stop answered every waiting client at once; the held runs end once their provider answers.
    const answered = await Promise.all([...held, waiting]);
    expect(answered.map((res) => res.status)).toEqual([202, 202, 202]);
    releaseHeld();
    for (const res of answered.slice(0, 2))
      expect((await finished(app.http, setup.org.adminKey, res.body.id)).status).toBe('succeeded');
    await stopped;
  }, 60_000);
});

// Last: it closes the app's runner.
it('a shutdown takes no new runs and waits for those in flight', async () => {
  const runs = app.infra.syncRuns as SyncRuns;
  const session = await newSession();
  const running = await invoke(app.http, setup.org.adminKey, body(session.id, 'hold shutdown'), 1);
  expect(running.status).toBe(202);
  let closed = false;
  const closing = runs.close().then(() => (closed = true));
  await new Promise((r) => setTimeout(r, 300));
  expect(closed).toBe(false);
  expect(runs.inFlight).toBe(1);

  const after = await invoke(app.http, setup.org.adminKey, body(session.id, 'after shutdown began'), 1);
  expect(await jobState(after.body.id)).toBe('waiting');

  releaseHeld();
  await closing;
  expect(runs.inFlight).toBe(0);
  expect((await finished(app.http, setup.org.adminKey, running.body.id)).status).toBe('succeeded');
});
