import { spawnSync } from 'node:child_process';
import { AsyncLocalStorage } from 'node:async_hooks';
import { join } from 'node:path';
import { eventually, invoke, invokeBody, openSession, setUpInvoking } from '../support/invoke-fixtures';
import { StubProvider } from '../support/stub-provider';
import { startTestApp, type TestApp } from '../support/test-app';
import { TEST_REDIS_URL } from '../support/test-db';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

/**
 * A worker process never switches on an AsyncLocalStorage. On Node 20 and 22 one that is on makes
 * every promise of the process run async hooks (about 100 ns more per await): 4-5% of a busy
 * worker's CPU in a profile; MikroORM switches its own on at its first transaction or flush,
 * for good. The workers' job paths use their own SQL, so the only way in was the start-up reseal.
 * Node versions whose AsyncLocalStorage no longer runs on promise hooks have nothing to watch.
 */
const PROBE = join(__dirname, '../support/async-hooks-probe.cjs');
const SWITCHED_ON = 'async-hooks probe: an AsyncLocalStorage switched on';
const watchable = typeof (AsyncLocalStorage.prototype as { _enable?: unknown })._enable === 'function';
const maybe = watchable ? it : it.skip;

let app: TestApp;
let stub: StubProvider;
let worker: WorkerProcess | undefined;

beforeAll(async () => {
  stub = await new StubProvider().start();
  stub.answer(200, {
    choices: [{ message: { role: 'assistant', content: 'ok' } }],
    usage: { prompt_tokens: 10, completion_tokens: 5 },
  });
  app = await startTestApp({ env: { CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true' } });
});

afterAll(async () => {
  await worker?.stop();
  await app?.close();
  await stub?.stop();
});

describe('the async-hooks probe', () => {
  maybe('reports an AsyncLocalStorage switching on', () => {
    const run = spawnSync(
      process.execPath,
      ['--require', PROBE, '-e', "new (require('node:async_hooks').AsyncLocalStorage)().run(1, () => {})"],
      { encoding: 'utf8' },
    );
    expect(run.stdout).toContain(SWITCHED_ON);
  });
});

describe('a worker process', () => {
  maybe('runs governed invokes, guardian to provider to audit seal, without switching one on', async () => {
    worker = await startWorkerProcess({
      DATABASE_URL: app.db.url,
      REDIS_URL: TEST_REDIS_URL,
      CP_REDIS_PREFIX: app.prefix,
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require ${PROBE}`.trim(),
    });
    expect(worker.output()).toContain('async-hooks probe: watching');
    const setup = await setUpInvoking(app.http, {
      baseUrl: stub.url,
      models: ['stub-model'],
      price: { input: 1, output: 2 },
    });
    const session = await openSession(app.http, setup.org.adminKey, {
      agent_id: setup.agentId,
      max_cost_usd: 1,
    });
    for (let i = 0; i < 3; i++) {
      const res = await invoke(
        app.http,
        setup.org.adminKey,
        invokeBody(session.id, { model: 'stub-model' }),
        10,
      );
      expect(res.body).toMatchObject({ status: 'succeeded' });
    }
    // The worker's seal job has chained the three ends (read from the table: an API read would
    // seal them itself).
    await eventually(async () => {
      const sealed = await app.infra.knex('audit_entries').where({ action: 'llm.invoke.succeeded' });
      return sealed.length === 3;
    });
    expect(worker.output()).not.toContain(SWITCHED_ON);
  });
});
