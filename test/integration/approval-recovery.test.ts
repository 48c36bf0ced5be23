import type { ServerResponse } from 'node:http';
import { mintKey } from '../support/factories';
import { eventually, finished, setUpInvoking, type InvokeSetup } from '../support/invoke-fixtures';
import { approverKeys, pausedInvoke, requireApproval, sessionFor, vote } from '../support/approval-fixtures';
import { StubProvider } from '../support/stub-provider';
import { startTestApp, type TestApp } from '../support/test-app';
import { TEST_REDIS_URL } from '../support/test-db';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

/**
 * An approved invocation is run once, whatever dies between the vote and the provider's answer:
 * the worker (SIGKILL), or the enqueue of its run job. The API only; workers are real processes.
 */
let app: TestApp;
let stub: StubProvider;
let setup: InvokeSetup;
let agentKey: string;
let approver: string;
const held: ServerResponse[] = [];
let holdNext = false;
const workers: WorkerProcess[] = [];

const answerNow = (res: ServerResponse) =>
  res.writeHead(200, { 'content-type': 'application/json' }).end(
    JSON.stringify({
      choices: [{ message: { role: 'assistant', content: 'ok' } }],
      usage: { prompt_tokens: 40, completion_tokens: 10 },
    }),
  );

beforeAll(async () => {
  stub = await new StubProvider().start();
  stub.handler = (_req, res) => {
    if (!holdNext) return answerNow(res);
    holdNext = false;
    held.push(res); // never answered: the worker calling is about to die
  };
  app = await startTestApp({ env: { CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true' } });
  setup = await setUpInvoking(app.http, { baseUrl: stub.url, models: ['gated'] });
  await requireApproval(app.http, setup.org.adminKey, { model: 'gated' });
  agentKey = (await mintKey(app.http, setup.org.adminKey, ['llm:invoke', 'sessions:read', 'policies:read']))
    .key;
  [approver] = (await approverKeys(app.http, setup.org.adminKey, 1)) as [string];
}, 60_000);
afterAll(async () => {
  for (const w of workers) await w.kill();
  for (const res of held) res.destroy();
  await app.close();
  await stub.stop();
});

const startWorker = async () => {
  const worker = await startWorkerProcess({
    DATABASE_URL: app.db.url,
    REDIS_URL: TEST_REDIS_URL,
    CP_REDIS_PREFIX: app.prefix,
    // A dead worker's jobs are taken over after about a second; the reaper acts after one too.
    CP_JOB_LOCK_MS: '1000',
    CP_REAP_AFTER_MS: '1000',
  });
  workers.push(worker);
  return worker;
};

const body = (sessionId: string, marker: string) => ({
  session_id: sessionId,
  model: 'gated',
  messages: [{ role: 'user', content: marker }],
  max_tokens: 10,
});

const callsWith = (marker: string) =>
  stub.requests.filter((r) => JSON.stringify(r.body).includes(marker)).length;

describe('between the vote and the provider', () => {
  it('a worker SIGKILLed after the vote: another worker resumes it, and the provider is called once', async () => {
    const first = await startWorker();
    const session = await sessionFor(app.http, setup);
    const { invocation, approval } = await pausedInvoke(app.http, agentKey, body(session.id, 'recover-1'));
    await first.kill();
    expect((await vote(app.http, approver, approval.id, 'approve')).status).toBe(200);
    expect(callsWith('recover-1')).toBe(0);
    await startWorker();
    const done = await finished(app.http, agentKey, invocation.id, 30_000);
    expect(done.status).toBe('succeeded');
    expect(callsWith('recover-1')).toBe(1);
  });

  it('a worker SIGKILLed inside the resumed provider call: charged at its reservation, never called again', async () => {
    const session = await sessionFor(app.http, setup);
    const { invocation, approval } = await pausedInvoke(app.http, agentKey, body(session.id, 'recover-2'));
    const inCall = workers.at(-1) as WorkerProcess;
    holdNext = true;
    expect((await vote(app.http, approver, approval.id, 'approve')).status).toBe(200);
    await eventually(async () => callsWith('recover-2') === 1);
    await inCall.kill();
    await startWorker();
    const done = await finished(app.http, agentKey, invocation.id, 30_000);
    expect(done).toMatchObject({ status: 'failed', error: { error_code: 'provider_outcome_unknown' } });
    expect(done.cost_usd).toBeGreaterThan(0);
    expect(callsWith('recover-2')).toBe(1);
  });

  it('a run job lost after the vote (the API died before enqueueing it): the reaper enqueues it, one call', async () => {
    for (const w of workers) await w.kill();
    const session = await sessionFor(app.http, setup);
    await startWorker();
    const { invocation, approval } = await pausedInvoke(app.http, agentKey, body(session.id, 'recover-3'));
    for (const w of workers) await w.kill();
    expect((await vote(app.http, approver, approval.id, 'approve')).status).toBe(200);
    // The run job the vote enqueued never existed, as far as any worker can tell. (It has the
    // invocation's id; the job that paused the invocation has an id of its own.)
    await app.infra.queues.queue('invoke').remove(invocation.id);
    expect(await app.infra.queues.queue('invoke').getJob(invocation.id)).toBeUndefined();
    await startWorker();
    const done = await finished(app.http, agentKey, invocation.id, 40_000);
    expect(done.status).toBe('succeeded');
    expect(callsWith('recover-3')).toBe(1);
  }, 60_000);
});
