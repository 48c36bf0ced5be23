import { eventually, invoke, invokeBody, openSession, setUpInvoking } from '../support/invoke-fixtures';
import { RedisServer } from '../support/redis-server';
import { startTestApp, type TestApp } from '../support/test-app';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

jest.setTimeout(60_000);

let redis: RedisServer;
let app: TestApp;
let worker: WorkerProcess | undefined;

beforeAll(async () => {
  redis = await RedisServer.start();
  app = await startTestApp({ redisUrl: redis.url });
});

afterAll(async () => {
  try {
    await worker?.kill();
    if (!redis.running) await redis.start();
    await app.close();
  } finally {
    await redis.stop();
  }
});

/*
 * In a worker process of its own, as an operator runs it: a BullMQ worker given up on can stay
 * closing for good (taskforcesh/bullmq#4656, open in 6.7.0: close() disconnects the blocking
 * connection while ioredis is reconnecting, which cancels the reconnect and never emits the `end`
 * close() waits for). In the test runner's process its lock-extender timer then held the Jest
 * worker open past the run, which Jest force-exited ("a worker process has failed to exit
 * gracefully"); the service itself ends with process.exit, as this process does.
 */
describe('stopping the workers when Redis went first (restarted or stopped under them)', () => {
  it('does not wait for ever on a job in flight: it gives up within seconds, says why, and exits', async () => {
    worker = await startWorkerProcess({
      DATABASE_URL: app.db.url,
      REDIS_URL: redis.url,
      CP_REDIS_PREFIX: app.prefix,
    });
    const setup = await setUpInvoking(app.http, { models: ['mock-slow-1500'] });
    const session = await openSession(app.http, setup.org.adminKey, {
      agent_id: setup.agentId,
      max_cost_usd: 1,
    });
    const accepted = await invoke(
      app.http,
      setup.org.adminKey,
      invokeBody(session.id, { model: 'mock-slow-1500' }),
      0,
    );
    expect(accepted.status).toBe(202);
    // The provider call is in flight: the job can only record its end through Redis.
    await eventually(async () => {
      const row = await app.infra.knex('invocations').where({ id: accepted.body.id }).first();
      return row?.status === 'running';
    });
    await redis.kill();
    const started = Date.now();
    await worker.stop(20_000);
    expect(Date.now() - started).toBeLessThan(5_000);
    // Its own exit, not the SIGKILL stop() sends after 20 s.
    expect(worker.child.signalCode).toBeNull();
    expect(worker.output()).toMatch(/Redis is gone.*stalled-job check/);
    // Tidying up: with Redis back and answering, the app's own connections close cleanly.
    await redis.start();
    await eventually(() =>
      app.infra.checks.redis().then(
        () => true,
        () => false,
      ),
    );
  });
});
