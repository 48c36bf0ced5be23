import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { Client } from 'pg';
import { signupOrg } from '../support/factories';
import { eventually } from '../support/eventually';
import { HttpClient } from '../support/http-client';
import { finished, invoke, invokeBody, openSession, setUpInvoking } from '../support/invoke-fixtures';
import { parsePrometheusText, valueOf } from '../support/prometheus-text';
import { listeningUrl, ROOT, runNpmScript, type ServiceProcess } from '../support/service-process';
import { createTestDatabase, TEST_REDIS_URL, type TestDatabase } from '../support/test-db';

jest.setTimeout(120_000);

let db: TestDatabase;
let dataDir: string;
const running: ServiceProcess[] = [];
const prefixes = new Set<string>();

beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = mkdtempSync(join(tmpdir(), 'cp-e2e-'));
});
afterAll(async () => {
  await Promise.all(running.map((p) => p.stop()));
  await deleteKeys([...prefixes]);
  await db.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** What the service processes left in the shared Redis under their prefixes. */
async function deleteKeys(used: string[]): Promise<void> {
  const redis = new Redis(TEST_REDIS_URL);
  for (const prefix of used) {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length) await redis.del(...keys);
  }
  redis.disconnect();
}

/** Starts an npm script on PORT=0: a port picked beforehand could be taken before the listen. */
function start(script: string, extraEnv: Record<string, string> = {}): ServiceProcess {
  const env = {
    DATABASE_URL: db.url,
    REDIS_URL: TEST_REDIS_URL,
    PORT: '0',
    CP_DATA_DIR: dataDir,
    CP_REDIS_PREFIX: `cpe_${randomBytes(4).toString('hex')}`,
    LOG_LEVEL: 'info',
    ...extraEnv,
  };
  prefixes.add(env.CP_REDIS_PREFIX);
  const proc = runNpmScript(script, env);
  running.push(proc);
  return proc;
}

/** Starts a script that serves HTTP and waits until it listens. */
async function startServing(script: string, extraEnv: Record<string, string> = {}) {
  const proc = start(script, extraEnv);
  await proc.waitFor(/ready: listening/);
  return { proc, http: new HttpClient(listeningUrl(proc)) };
}

/** How many sync invokes the process ran itself (undefined: it runs none, CP_SYNC_INVOKES_IN_API). */
async function syncRunsOf(proc: ServiceProcess, outcome: string): Promise<number | undefined> {
  const text = await (await fetch(`${listeningUrl(proc)}/metrics`)).text();
  return valueOf(parsePrometheusText(text), 'cp_sync_invokes_in_api_total', { outcome });
}

async function countSealed(orgId: string): Promise<number> {
  const client = new Client({ connectionString: db.url });
  await client.connect();
  const { rows } = await client.query('select count(*)::int as n from audit_entries where org_id = $1', [
    orgId,
  ]);
  await client.end();
  return rows[0].n;
}

describe('npm start on an empty database', () => {
  it('migrates, serves the README walkthrough, and stops cleanly on SIGTERM', async () => {
    const { proc, http } = await startServing('start');
    expect((await http.get('/ready')).status).toBe(200);

    const org = await signupOrg(http);
    const minted = await http.post<{ key: string }>(
      '/v1/keys',
      { name: 'ci', scopes: ['audit:read'] },
      org.adminKey,
    );
    expect(minted.status).toBe(201);
    expect((await http.get('/v1/audit', minted.body.key)).status).toBe(200);
    const refused = await http.post('/v1/keys', { name: 'x', scopes: ['read'] }, minted.body.key);
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ error_code: 'insufficient_scope', required_scope: 'org:admin' });

    // The README's invoke walkthrough: the mock provider, a price, an agent, a session, an invoke.
    const setup = await setUpInvoking(http);
    const session = await openSession(http, setup.org.adminKey, { agent_id: setup.agentId, max_cost_usd: 1 });
    const done = await invoke(http, setup.org.adminKey, invokeBody(session.id), 10);
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ status: 'succeeded', output: { content: 'mock reply to: hello' } });
    // One process: the API ran it itself, not through the queue (CP_SYNC_INVOKES_IN_API unset).
    // Counted once the run returns, which may be just after its client was answered.
    await eventually(async () => (await syncRunsOf(proc, 'ran')) === 1);

    expect(await proc.stop()).toBe(true);
    expect(proc.output()).toMatch(/shutting down/);
  });

  it('runs the API and the workers as separate processes (start:api, start:worker): the workers run what is queued', async () => {
    const shared = { CP_REDIS_PREFIX: `cpe_${randomBytes(4).toString('hex')}` };
    const api = await startServing('start:api', shared);
    const worker = start('start:worker', shared);
    await worker.waitFor(/ready: worker running/);
    expect(api.proc.output()).not.toMatch(/workers ready/);
    // The worker process, not the API, seals the audit events the API wrote.
    const org = await signupOrg(api.http);
    await eventually(async () => (await countSealed(org.orgId)) === 3);
    // ... and runs the invocations whose client does not wait; the API runs those whose client
    // waits itself (CP_SYNC_INVOKES_IN_API unset).
    const setup = await setUpInvoking(api.http);
    const session = await openSession(api.http, setup.org.adminKey, {
      agent_id: setup.agentId,
      max_cost_usd: 1,
    });
    const queued = await invoke(api.http, setup.org.adminKey, invokeBody(session.id), 0);
    expect(queued.body.status).toBe('queued');
    expect((await finished(api.http, setup.org.adminKey, queued.body.id)).status).toBe('succeeded');
    expect(await syncRunsOf(api.proc, 'ran')).toBeUndefined();
    const done = await invoke(api.http, setup.org.adminKey, invokeBody(session.id), 10);
    expect(done.body.status).toBe('succeeded');
    await eventually(async () => (await syncRunsOf(api.proc, 'ran')) === 1);
    expect(await worker.stop()).toBe(true);
    expect(await api.proc.stop()).toBe(true);
  });

  it('answers long polls at once when it stops, instead of holding the shutdown', async () => {
    const { proc, http } = await startServing('start:api');
    const setup = await setUpInvoking(http);
    const session = await openSession(http, setup.org.adminKey, { agent_id: setup.agentId, max_cost_usd: 1 });
    // No worker runs: the invocation stays queued and the long poll would wait 25 s.
    const queued = await invoke(http, setup.org.adminKey, invokeBody(session.id), 0);
    const started = Date.now();
    const poll = http.get<{ status: string }>(
      `/v1/llm/invocations/${queued.body.id}?wait=25`,
      setup.org.adminKey,
    );
    await new Promise((r) => setTimeout(r, 300));
    const stopped = proc.stop();
    const answer = await poll;
    expect(answer.status).toBe(200);
    expect(answer.body.status).toBe('queued');
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await stopped).toBe(true);
  });

  it('a start whose port is taken exits 1 before its workers take any job', async () => {
    const shared = { CP_REDIS_PREFIX: `cpe_${randomBytes(4).toString('hex')}` };
    const api = await startServing('start:api', shared);
    const setup = await setUpInvoking(api.http);
    const session = await openSession(api.http, setup.org.adminKey, {
      agent_id: setup.agentId,
      max_cost_usd: 1,
    });
    // No worker runs yet: the invocation waits in the queue the clashing start would serve.
    const queued = await invoke(api.http, setup.org.adminKey, invokeBody(session.id), 0);
    const clash = start('start', { ...shared, PORT: new URL(api.http.baseUrl).port });
    const code = await new Promise<number | null>((r) => clash.child.on('exit', r));
    expect(code).toBe(1);
    expect(clash.output()).toMatch(/EADDRINUSE/);
    expect(clash.output()).toMatch(/cannot listen on HOST=127\.0\.0\.1 PORT=\d+: .*set PORT to a free port/);
    expect(clash.output()).not.toMatch(/workers ready/);
    const after = await api.http.get<{ status: string }>(
      `/v1/llm/invocations/${queued.body.id}`,
      setup.org.adminKey,
    );
    expect(after.body.status).toBe('queued');
    expect(await api.proc.stop()).toBe(true);
  });

  it('exits 0 when a job outlasts CP_SHUTDOWN_TIMEOUT_MS, leaving it to other workers (README)', async () => {
    const env = {
      ...process.env,
      DATABASE_URL: db.url,
      REDIS_URL: TEST_REDIS_URL,
      PORT: '0',
      CP_DATA_DIR: dataDir,
      CP_REDIS_PREFIX: `cpe_${randomBytes(4).toString('hex')}`,
      CP_SHUTDOWN_TIMEOUT_MS: '1500',
      LOG_LEVEL: 'info',
    };
    prefixes.add(env.CP_REDIS_PREFIX);
    // The node process itself, so the exit code is the service's, not npm's.
    const child = spawn(process.execPath, ['dist/main.js', '--role', 'all'], { cwd: ROOT, env });
    let out = '';
    child.stdout.on('data', (d) => (out += String(d)));
    const exited = new Promise<number | null>((r) => child.on('exit', r));
    await eventually(async () => /ready: listening/.test(out));
    const http = new HttpClient(listeningUrl(out));
    const setup = await setUpInvoking(http, { models: ['mock-slow-20000'] });
    const session = await openSession(http, setup.org.adminKey, { agent_id: setup.agentId, max_cost_usd: 1 });
    const slow = await invoke(
      http,
      setup.org.adminKey,
      invokeBody(session.id, { model: 'mock-slow-20000' }),
      0,
    );
    await eventually(
      async () =>
        (await http.get<{ status: string }>(`/v1/llm/invocations/${slow.body.id}`, setup.org.adminKey)).body
          .status === 'running',
    );
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(out).toMatch(/shutdown took longer than CP_SHUTDOWN_TIMEOUT_MS/);
  });

  it('names HOST when the address cannot be listened on (QA: it said only the system error)', async () => {
    const proc = start('start:api', { HOST: '192.0.2.1' });
    const code = await new Promise<number | null>((r) => proc.child.on('exit', r));
    expect(code).toBe(1);
    expect(proc.output()).toMatch(
      /cannot listen on HOST=192\.0\.2\.1 PORT=0: .*set HOST to an address of this machine/,
    );
  });

  it('refuses to start with a clear message for a bad variable', async () => {
    const proc = start('start', { PORT: 'eighty' });
    const code = await new Promise<number | null>((r) => proc.child.on('exit', r));
    expect(code).toBe(1);
    expect(proc.output()).toMatch(/PORT: /);
    expect(proc.output()).toMatch(/Fix the variables above/);
  });

  it('applied real migrations, recorded in the migrations table', async () => {
    const client = new Client({ connectionString: db.url });
    await client.connect();
    const { rows } = await client.query('select name from mikro_orm_migrations');
    await client.end();
    expect(rows.map((r) => r.name)).toContain('Migration20261122000001Foundation');
  });
});
