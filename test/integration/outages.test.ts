import { Client } from 'pg';
import type Redis from 'ioredis';
import { hashToken } from '../../domain/auth/tokens';
import { QUEUES } from '../../domain/jobs';
import { signupOrg, type SignedUpOrg } from '../support/factories';
import {
  finished,
  invokeBody,
  openSession,
  setUpInvoking,
  type InvocationBody,
  type InvokeSetup,
} from '../support/invoke-fixtures';
import { RedisServer } from '../support/redis-server';
import { TcpProxy } from '../support/tcp-proxy';
import { startTestApp, type TestApp } from '../support/test-app';
import { createTestDatabase, superuserQuery, type TestDatabase } from '../support/test-db';

jest.setTimeout(60_000);

/** An outage must be answered quickly, not by a hanging request. */
const FAST_MS = 3_000;
/** How long the service may take to be ready again once the store is back. */
const RECOVERY_DEADLINE_MS = 20_000;

interface Timed {
  status: number;
  body: Record<string, unknown>;
  headers: Headers;
  elapsedMs: number;
}

/** One request with a hard deadline (a hanging request fails the test instead of stalling it). */
async function call(
  app: TestApp,
  method: string,
  path: string,
  options: { token?: string; body?: unknown } = {},
  timeoutMs = 10_000,
): Promise<Timed> {
  const headers: Record<string, string> = {};
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const started = Date.now();
  const res = await fetch(app.http.baseUrl + path, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  const elapsedMs = Date.now() - started;
  return { status: res.status, body: text ? JSON.parse(text) : {}, headers: res.headers, elapsedMs };
}

function expectUnavailable(res: Timed): void {
  expect(res.status).toBe(503);
  expect(res.body).toEqual({
    error_code: 'unavailable',
    message: expect.any(String),
    request_id: res.headers.get('x-request-id'),
  });
  expect(res.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
  expect(res.elapsedMs).toBeLessThan(FAST_MS);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls GET /ready until it answers 200; returns how long that took. */
async function untilReady(app: TestApp): Promise<number> {
  const started = Date.now();
  for (;;) {
    const res = await call(app, 'GET', '/ready', {}, 5_000).catch(() => null);
    if (res?.status === 200) {
      return Date.now() - started;
    }
    if (Date.now() - started > RECOVERY_DEADLINE_MS) {
      throw new Error(
        `not ready ${RECOVERY_DEADLINE_MS} ms after the store came back: ${JSON.stringify(res?.body)}`,
      );
    }
    await sleep(200);
  }
}

describe('Redis outage', () => {
  let redis: RedisServer;
  let app: TestApp | undefined;
  let org: SignedUpOrg;

  beforeAll(async () => {
    redis = await RedisServer.start();
    app = await startTestApp({ redisUrl: redis.url });
    org = await signupOrg(app.http, 'Redis Outage Inc');
    expect((await call(app, 'GET', '/v1/keys', { token: org.adminKey })).status).toBe(200);
  });

  afterAll(async () => {
    try {
      if (!redis.running) await redis.start().catch(() => undefined);
      await app?.close();
    } finally {
      await redis?.stop();
    }
  });

  const theApp = () => app as TestApp;

  describe('while Redis is down', () => {
    beforeAll(() => redis.kill());

    it('answers an authenticated request with 503 unavailable and Retry-After, quickly', async () => {
      expectUnavailable(await call(theApp(), 'GET', '/v1/keys', { token: org.adminKey }));
      // A token no cache has seen yet fails the same way.
      expectUnavailable(await call(theApp(), 'GET', '/v1/keys', { token: org.sessionToken }));
      expectUnavailable(
        await call(theApp(), 'POST', '/v1/keys', {
          token: org.adminKey,
          body: { name: 'during redis outage', scopes: ['audit:read'] },
        }),
      );
    });

    it('answers a public route with 503 unavailable and Retry-After, quickly', async () => {
      expectUnavailable(await call(theApp(), 'GET', '/v1/config/public'));
    });

    it('keeps GET /health at 200 (liveness does not depend on Redis)', async () => {
      const res = await call(theApp(), 'GET', '/health');
      expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { status: 'ok' } });
      expect(res.elapsedMs).toBeLessThan(FAST_MS);
    });

    it('answers GET /ready with 503 and checks.redis "error", checks.database "ok"', async () => {
      const res = await call(theApp(), 'GET', '/ready');
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ checks: { database: 'ok', redis: 'error' } });
      expect(res.elapsedMs).toBeLessThan(FAST_MS);
    });
  });

  describe('once Redis is back on the same port', () => {
    beforeAll(() => redis.start());

    it('becomes ready again within seconds and serves requests', async () => {
      await untilReady(theApp());
      const ready = await call(theApp(), 'GET', '/ready');
      expect(ready.body).toEqual({ status: 'ready', checks: { database: 'ok', redis: 'ok' } });
      // The new Redis is empty: tokens are looked up again in the database.
      expect((await call(theApp(), 'GET', '/v1/keys', { token: org.adminKey })).status).toBe(200);
      expect((await call(theApp(), 'GET', '/v1/config/public')).status).toBe(200);
      const names = (
        (await call(theApp(), 'GET', '/v1/keys?limit=100', { token: org.adminKey })).body.data as {
          name: string;
        }[]
      ).map((k) => k.name);
      expect(names).not.toContain('during redis outage');
    });
  });
});

describe('a frozen Redis (its connections open, nothing answered)', () => {
  let redis: RedisServer;
  let app: TestApp | undefined;
  let org: SignedUpOrg;

  beforeAll(async () => {
    redis = await RedisServer.start();
    app = await startTestApp({ redisUrl: redis.url });
    org = await signupOrg(app.http, 'Frozen Redis Inc');
    expect((await call(app, 'GET', '/v1/keys', { token: org.adminKey })).status).toBe(200);
    redis.freeze();
  });

  afterAll(async () => {
    try {
      redis.thaw();
      await app?.close();
    } finally {
      await redis?.stop();
    }
  });

  it('answers 503 unavailable with Retry-After, quickly, instead of hanging the request', async () => {
    const theApp = app as TestApp;
    expectUnavailable(await call(theApp, 'GET', '/v1/keys', { token: org.adminKey }));
    expectUnavailable(await call(theApp, 'GET', '/v1/config/public'));
    expect((await call(theApp, 'GET', '/health')).status).toBe(200);
  });

  it('serves requests again once Redis answers', async () => {
    redis.thaw();
    await untilReady(app as TestApp);
    expect((await call(app as TestApp, 'GET', '/v1/keys', { token: org.adminKey })).status).toBe(200);
  });
});

describe('an invoke while the job queue is still reconnecting (Redis just came back)', () => {
  let redis: RedisServer;
  let app: TestApp | undefined;
  let setup: InvokeSetup;

  beforeAll(async () => {
    redis = await RedisServer.start();
    // Workers run too, so the reaper can pick up what the API could not enqueue.
    app = await startTestApp({ redisUrl: redis.url, workers: true, env: { CP_REAP_AFTER_MS: '1000' } });
    setup = await setUpInvoking(app.http);
  });

  afterAll(async () => {
    try {
      await app?.close();
    } finally {
      await redis?.stop();
    }
  });

  const theApp = () => app as TestApp;

  /**
   * Drops the API's invoke-queue producer connection on the server side, as a Redis restart
   * does. BullMQ waits at least a second before it reconnects, and its producers have no offline
   * queue, so an enqueue fails in that second while the rest of the API (auth, rate limits) works.
   */
  async function dropQueueProducer(): Promise<void> {
    const producer = (await theApp().infra.queues.queue(QUEUES.invoke).backend.client) as unknown as Redis;
    const id = await producer.client('ID');
    await theApp().infra.redis.client('KILL', 'ID', String(id));
    for (let i = 0; i < 100 && producer.status === 'ready'; i++) await sleep(5);
    expect(producer.status).not.toBe('ready');
  }

  it('answers 202 with the queued invocation (not a 503 that leaves a failed one), and runs it later', async () => {
    const session = await openSession(theApp().http, setup.org.adminKey, {
      agent_id: setup.agentId,
      max_cost_usd: 1,
    });
    const body = invokeBody(session.id);
    // The producer connection exists: an invoke went through it.
    expect(
      (await call(theApp(), 'POST', '/v1/llm/invoke?wait=5', { token: setup.org.adminKey, body })).status,
    ).toBe(200);

    await dropQueueProducer();
    const res = await call(theApp(), 'POST', '/v1/llm/invoke?wait=5', { token: setup.org.adminKey, body });
    expect(res.status).toBe(202);
    expect(res.elapsedMs).toBeLessThan(FAST_MS);
    const accepted = res.body as unknown as InvocationBody;
    expect(accepted).toMatchObject({ status: 'queued', session_id: session.id, error: null });
    expect(res.headers.get('location')).toBe(`/v1/llm/invocations/${accepted.id}`);

    // What the session shows is what the client was told: queued, never failed.
    const listed = await call(theApp(), 'GET', `/v1/llm/invocations?session_id=${session.id}`, {
      token: setup.org.adminKey,
    });
    const statuses = (listed.body.data as InvocationBody[]).map((i) => [i.id, i.status]);
    expect(statuses).toContainEqual([accepted.id, 'queued']);
    expect(statuses.map(([, status]) => status)).not.toContain('failed');

    // The row is durable: once the queue is reachable, the reaper enqueues it and it runs.
    const done = await finished(theApp().http, setup.org.adminKey, accepted.id, 30_000);
    expect(done).toMatchObject({ status: 'succeeded', error: null });
  });
});

describe('PostgreSQL outage', () => {
  let realDb: TestDatabase;
  let proxy: TcpProxy;
  let app: TestApp | undefined;
  let org: SignedUpOrg;
  let locker: Client | undefined;

  beforeAll(async () => {
    realDb = await createTestDatabase();
    const target = new URL(realDb.url);
    proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    await proxy.start();
    // The app reaches PostgreSQL only through the proxy; the test itself talks to it directly.
    app = await startTestApp({
      database: { url: proxy.proxiedUrl(realDb.url), name: realDb.name, drop: realDb.drop },
    });
    org = await signupOrg(app.http, 'Database Outage Inc');
    expect((await call(app, 'GET', '/v1/keys', { token: org.adminKey })).status).toBe(200);
  });

  afterAll(async () => {
    try {
      await locker?.end().catch(() => undefined);
      await proxy?.start();
      await app?.close();
    } finally {
      await proxy?.stop();
      await realDb?.drop(); // startTestApp does not drop a database it was given
    }
  });

  const theApp = () => app as TestApp;
  const directly = (sql: string, params: unknown[] = []) => superuserQuery(realDb.url, sql, params);
  const keysNamed = async (name: string) =>
    (await directly('select id from api_keys where name = $1', [name])).rowCount;
  const auditEventsNamed = async (name: string) =>
    (
      await directly(
        `select id from audit_outbox where details->>'name' = $1
         union all select id from audit_entries where details->>'name' = $1`,
        [name],
      )
    ).rowCount;
  const cachedInRedis = async (token: string) =>
    (await theApp().infra.redis.exists(`${theApp().prefix}:auth:${hashToken(token)}`)) === 1;

  describe('while PostgreSQL is unreachable', () => {
    beforeAll(() => proxy.stop());

    it('answers a request whose token no cache knows with 503 unavailable, never 500', async () => {
      expect(await cachedInRedis(org.sessionToken)).toBe(false);
      expectUnavailable(await call(theApp(), 'GET', '/v1/keys', { token: org.sessionToken }));
    });

    it('answers a key mint and a key list with 503 unavailable, never 500', async () => {
      expect(await cachedInRedis(org.adminKey)).toBe(true);
      expectUnavailable(
        await call(theApp(), 'POST', '/v1/keys', {
          token: org.adminKey,
          body: { name: 'minted during outage', scopes: ['audit:read'] },
        }),
      );
      expectUnavailable(await call(theApp(), 'GET', '/v1/keys', { token: org.adminKey }));
    });

    it('keeps GET /health at 200 (liveness does not depend on the database)', async () => {
      const res = await call(theApp(), 'GET', '/health');
      expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { status: 'ok' } });
      expect(res.elapsedMs).toBeLessThan(FAST_MS);
    });

    it('answers GET /ready with 503 and checks.database "error", checks.redis "ok"', async () => {
      const res = await call(theApp(), 'GET', '/ready');
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ checks: { database: 'error', redis: 'ok' } });
      expect(res.elapsedMs).toBeLessThan(FAST_MS);
    });
  });

  describe('once PostgreSQL is reachable again', () => {
    beforeAll(() => proxy.start());

    it('becomes ready again, and nothing was half-written during the outage', async () => {
      await untilReady(theApp());
      expect(await keysNamed('minted during outage')).toBe(0);
      expect(await auditEventsNamed('minted during outage')).toBe(0);
      const verify = await call(theApp(), 'GET', '/v1/audit/verify', { token: org.adminKey });
      expect(verify.status).toBe(200);
      expect(verify.body).toMatchObject({ valid: true, first_broken_seq: null });
      // The token that met the outage works now, and so does minting.
      expect((await call(theApp(), 'GET', '/v1/keys', { token: org.sessionToken })).status).toBe(200);
      const minted = await call(theApp(), 'POST', '/v1/keys', {
        token: org.adminKey,
        body: { name: 'minted after outage', scopes: ['audit:read'] },
      });
      expect(minted.status).toBe(201);
      expect(await keysNamed('minted after outage')).toBe(1);
    });

    it('rolls back a key mint whose connection is cut in the middle of its transaction', async () => {
      // Hold api_keys so that the mint's transaction blocks after it has written its audit event.
      locker = new Client({ connectionString: realDb.url });
      await locker.connect();
      await locker.query('begin');
      await locker.query('lock table api_keys in share mode');

      const name = 'cut mid-transaction';
      const pending = call(
        theApp(),
        'POST',
        '/v1/keys',
        { token: org.adminKey, body: { name, scopes: ['audit:read'] } },
        20_000,
      );
      // Wait for the app's transaction to be blocked on the lock, holding what it has written.
      let blocked: { pid: number; written: string[] } | undefined;
      for (let i = 0; i < 100 && !blocked; i++) {
        const { rows } = await locker.query<{ pid: number; written: string[] }>(
          `select w.pid, array(select l.relation::regclass::text from pg_locks l
                                where l.pid = w.pid and l.granted and l.mode = 'RowExclusiveLock'
                                  and l.relation is not null) as written
             from pg_locks w
            where w.database = (select oid from pg_database where datname = current_database())
              and w.relation = 'api_keys'::regclass and not w.granted`,
        );
        blocked = rows[0];
        if (!blocked) await sleep(50);
      }
      // The transaction is half-written: its audit event is in, its key is not yet.
      expect(blocked?.written).toContain('audit_outbox');
      const blockedPid = (blocked as { pid: number }).pid;

      await proxy.stop();
      const cutAt = Date.now();
      const res = await pending;
      // Answered quickly once the connection broke (the request itself waited on the lock before).
      expectUnavailable({ ...res, elapsedMs: Date.now() - cutAt });

      // Let the orphaned backend run on: it must find its client gone and roll back.
      await locker.query('commit');
      await locker.end();
      locker = undefined;
      for (let i = 0; i < 100; i++) {
        const { rowCount } = await directly('select 1 from pg_stat_activity where pid = $1', [blockedPid]);
        if (rowCount === 0) break;
        await sleep(50);
      }
      expect((await directly('select 1 from pg_stat_activity where pid = $1', [blockedPid])).rowCount).toBe(
        0,
      );

      await proxy.start();
      await untilReady(theApp());
      expect(await keysNamed(name)).toBe(0);
      expect(await auditEventsNamed(name)).toBe(0);
      const verify = await call(theApp(), 'GET', '/v1/audit/verify', { token: org.adminKey });
      expect(verify.body).toMatchObject({ valid: true, first_broken_seq: null });
    });
  });
});
