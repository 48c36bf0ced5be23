import { spawnSync } from 'node:child_process';
import { AsyncLocalStorage } from 'node:async_hooks';
import { join } from 'node:path';
import { HttpClient } from '../support/http-client';
import { eventually, invoke, invokeBody, openSession, setUpInvoking } from '../support/invoke-fixtures';
import { listeningUrl } from '../support/service-process';
import { StubProvider } from '../support/stub-provider';
import { startTestApp, type TestApp } from '../support/test-app';
import { TEST_REDIS_URL } from '../support/test-db';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

/**
 * A worker process never switches on an AsyncLocalStorage, and an API process switches MikroORM's
 * off again once its management writes end. On Node 20 and 22 one that is on makes every promise
 * of the process run async hooks (about 100 ns more per await): 4-5% of a busy worker's CPU in a
 * profile, 12% of an API's per invoke; MikroORM switches its own on at each transaction or flush,
 * and leaves them on. The invoke path uses its own SQL. Node versions whose AsyncLocalStorage no
 * longer runs on promise hooks have nothing to watch.
 */
const PROBE = join(__dirname, '../support/async-hooks-probe.cjs');
const SWITCHED_ON = 'async-hooks probe: an AsyncLocalStorage switched on';
const ALL_OFF = 'async-hooks probe: all switched off';
const watchable = typeof (AsyncLocalStorage.prototype as { _enable?: unknown })._enable === 'function';
const maybe = watchable ? it : it.skip;

let app: TestApp;
let stub: StubProvider;
let worker: WorkerProcess | undefined;
let api: WorkerProcess | undefined;

beforeAll(async () => {
  stub = await new StubProvider().start();
  stub.answer(200, {
    choices: [{ message: { role: 'assistant', content: 'ok' } }],
    usage: { prompt_tokens: 10, completion_tokens: 5 },
  });
  app = await startTestApp({ env: { CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true' } });
});

afterAll(async () => {
  await api?.stop();
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

  maybe('reports the last one that was on switching off', () => {
    const script =
      "const s = new (require('node:async_hooks').AsyncLocalStorage)(); s.run(1, () => {}); s.disable()";
    const run = spawnSync(process.execPath, ['--require', PROBE, '-e', script], { encoding: 'utf8' });
    expect(run.stdout).toContain(ALL_OFF);
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

describe('an API process', () => {
  maybe(
    "switches MikroORM's storages off when its management writes end: its invokes run without hooks",
    async () => {
      api = await startWorkerProcess(
        {
          DATABASE_URL: app.db.url,
          REDIS_URL: TEST_REDIS_URL,
          CP_REDIS_PREFIX: app.prefix,
          // The API runs the invokes itself: their whole path is in the process watched.
          CP_SYNC_INVOKES_IN_API: 'true',
          LOG_LEVEL: 'info',
          NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require ${PROBE}`.trim(),
        },
        30_000,
        'api',
      );
      const http = new HttpClient(listeningUrl(api.output()));
      // Sign-up, credential, agent, prices and the session: MikroORM transactions in this process.
      const setup = await setUpInvoking(http, {
        baseUrl: stub.url,
        models: ['stub-model'],
        price: { input: 1, output: 2 },
      });
      const session = await openSession(http, setup.org.adminKey, {
        agent_id: setup.agentId,
        max_cost_usd: 1,
      });
      const writesEnded = api.output().length;
      for (let i = 0; i < 3; i++) {
        const res = await invoke(
          http,
          setup.org.adminKey,
          invokeBody(session.id, { model: 'stub-model' }),
          10,
        );
        expect(res.body).toMatchObject({ status: 'succeeded' });
      }
      const out = api.output();
      expect(out.slice(0, writesEnded)).toContain(SWITCHED_ON);
      expect(out.lastIndexOf(ALL_OFF)).toBeGreaterThan(out.lastIndexOf(SWITCHED_ON));
      expect(out.slice(writesEnded)).not.toContain(SWITCHED_ON);
    },
  );
});
