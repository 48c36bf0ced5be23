/**
 * `npm run bench -- [--seconds 10] [--concurrency 50] [--workers 1]`: the governed invoke path
 * against a local OpenAI-compatible stub with zero latency, everything on this machine.
 *
 * Starts the stub (own process), one API process and N worker processes (`tsx main.ts --role
 * api|worker`) on a fresh database and Redis prefix, then measures, at 1 caller and at
 * `concurrency` callers: (a) direct calls to the stub, the floor; (b) governed invokes with
 * `wait` (sync); (c) async invokes (202, then GET with wait until finished). Prints throughput
 * and p50/p99 latency of each, and cleans up.
 */
import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Redis from 'ioredis';
import { Client } from 'pg';
import { Pool } from 'undici';
import { freePort } from '../infra/embedded/free-port';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    concurrency: { type: 'string', default: '50' },
    workers: { type: 'string', default: '1' },
    stub: { type: 'boolean', default: false },
    // e.g. --only b to run the sync rows only (for profiling one scenario)
    only: { type: 'string' },
  },
});
const SECONDS = Number(args.seconds);
const CONCURRENCY = Number(args.concurrency);
const WORKERS = Number(args.workers);
const ADMIN_URL = process.env.BENCH_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const ROOT = join(__dirname, '..');
const MODEL = 'bench-model';

// --- the stub provider (a child process, so its CPU is its own) ---------------------------------

const ANSWER = JSON.stringify({
  model: MODEL,
  choices: [{ message: { role: 'assistant', content: 'ok' } }],
  usage: { prompt_tokens: 12, completion_tokens: 2 },
});

async function runStub(): Promise<void> {
  const { createServer } = await import('node:http');
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(ANSWER));
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => process.send?.((server.address() as { port: number }).port));
}

function startStub(): Promise<{ url: string; child: ChildProcess }> {
  const child = fork(__filename, ['--stub'], { execArgv: ['--import', 'tsx'] });
  return new Promise((resolve) =>
    child.on('message', (port) => resolve({ url: `http://127.0.0.1:${String(port)}`, child })),
  );
}

// --- the service ------------------------------------------------------------------------------------

function startRole(role: 'api' | 'worker', env: Record<string, string>): Promise<ChildProcess> {
  // BENCH_CPU_PROF=<dir>: write a V8 CPU profile of each service process there (open in Chrome DevTools).
  const profile = process.env.BENCH_CPU_PROF
    ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`]
    : [];
  const child = spawn(process.execPath, [...profile, '--import', 'tsx', 'main.ts', '--role', role], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  return new Promise((resolve, reject) => {
    const onData = (d: Buffer) => {
      out += String(d);
      if (/"msg":"ready/.test(out)) resolve(child);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${role} exited with ${code}:\n${out}`)));
  });
}

// --- where the CPU goes --------------------------------------------------------------------------------

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** CPU milliseconds (user + system) a process has used, from /proc; 0 once it is gone. */
function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

const pidsOf = (name: string): number[] => {
  try {
    return execFileSync('pgrep', ['-x', name], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
};

/** The processes whose CPU each row reports: ours by pid, PostgreSQL and Redis by name. */
type Components = Record<string, () => number[]>;

function cpuSnapshot(components: Components): Record<string, number> {
  const snapshot: Record<string, number> = {
    bench: (process.cpuUsage().user + process.cpuUsage().system) / 1000,
  };
  for (const [name, pids] of Object.entries(components))
    snapshot[name] = pids().reduce((s, pid) => s + cpuMs(pid), 0);
  return snapshot;
}

// --- load ----------------------------------------------------------------------------------------------

interface Result {
  label: string;
  callers: number;
  done: number;
  errors: number;
  seconds: number;
  latencies: number[];
  /** CPU milliseconds per completed call, per component. */
  cpuPerCall: Record<string, number>;
}

let components: Components = {};

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;

async function measure(label: string, callers: number, once: () => Promise<boolean>): Promise<Result> {
  const warmUntil = performance.now() + 1000;
  while (performance.now() < warmUntil) await Promise.all(Array.from({ length: callers }, once));
  const latencies: number[] = [];
  let errors = 0;
  const cpuBefore = cpuSnapshot(components);
  const started = performance.now();
  const stopAt = started + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (performance.now() < stopAt) {
        const t0 = performance.now();
        const ok = await once().catch(() => false);
        if (ok) latencies.push(performance.now() - t0);
        else errors++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpuAfter = cpuSnapshot(components);
  latencies.sort((a, b) => a - b);
  const cpuPerCall = Object.fromEntries(
    Object.keys(cpuAfter).map((k) => [
      k,
      ((cpuAfter[k] ?? 0) - (cpuBefore[k] ?? 0)) / Math.max(1, latencies.length),
    ]),
  );
  return { label, callers, done: latencies.length, errors, seconds, latencies, cpuPerCall };
}

function report(r: Result): void {
  const ms = (v: number) => v.toFixed(2).padStart(8);
  console.log(
    `${r.label.padEnd(34)} ${String(r.callers).padStart(3)} callers ${Math.round(r.done / r.seconds)
      .toString()
      .padStart(
        6,
      )}/s   p50 ${ms(percentile(r.latencies, 0.5))} ms   p99 ${ms(percentile(r.latencies, 0.99))} ms` +
      (r.errors ? `   errors ${r.errors}` : ''),
  );
  const cpu = Object.entries(r.cpuPerCall)
    .filter(([, ms]) => ms > 0)
    .map(([name, ms]) => `${name} ${(ms * 1000).toFixed(0)}`)
    .join('  ');
  console.log(`${''.padEnd(34)} CPU µs per call: ${cpu}`);
}

async function json(
  pool: Pool,
  method: 'GET' | 'POST' | 'PUT',
  path: string,
  token: string | null,
  body?: unknown,
) {
  const res = await pool.request({
    method,
    path,
    headers: {
      'content-type': 'application/json',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
}

async function setUp(api: Pool, stubUrl: string) {
  const signup = await json(api, 'POST', '/v1/orgs/signup', null, {
    org_name: 'bench',
    email: `bench-${randomBytes(4).toString('hex')}@example.test`,
    password: 'correct horse battery staple',
  });
  const admin = (signup.body.api_key as { key: string }).key;
  const cred = await json(api, 'POST', '/v1/credentials', admin, {
    name: 'stub',
    provider: 'openai_compatible',
    secret: 'sk-bench-secret',
    base_url: `${stubUrl}/v1`,
  });
  const agent = await json(api, 'POST', '/v1/agents', admin, {
    name: 'bench',
    allowed_models: [MODEL],
    credential_refs: [cred.body.credential_ref],
  });
  await json(api, 'PUT', `/v1/pricing/${MODEL}`, admin, {
    input_per_mtok_usd: 0.15,
    output_per_mtok_usd: 0.6,
  });
  const session = await json(api, 'POST', '/v1/sessions', admin, {
    agent_id: agent.body.id,
    max_cost_usd: 1000,
    ttl_seconds: 3600,
  });
  if (session.status !== 201) throw new Error(`setup failed: ${JSON.stringify(session.body)}`);
  return { admin, sessionId: session.body.id as string };
}

async function main(): Promise<void> {
  const database = `cp_bench_${randomBytes(5).toString('hex')}`;
  const prefix = `cpbench_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`create database ${database}`);
  const dbUrl = new URL(ADMIN_URL);
  dbUrl.pathname = `/${database}`;
  const children: ChildProcess[] = [];
  try {
    const stub = await startStub();
    children.push(stub.child);
    const port = await freePort();
    const env = {
      DATABASE_URL: dbUrl.toString(),
      REDIS_URL,
      CP_REDIS_PREFIX: prefix,
      PORT: String(port),
      LOG_LEVEL: 'info',
      NODE_ENV: 'development',
      CP_MASTER_KEY: randomBytes(32).toString('base64'),
      CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true',
      CP_RATE_LIMIT_PER_MINUTE: '1000000',
    };
    console.log(`starting the stub, 1 API and ${WORKERS} worker process(es) on ${database} ...`);
    // The API first: it applies migrations before workers connect.
    const apiProcess = await startRole('api', env);
    children.push(apiProcess);
    const workerProcesses: ChildProcess[] = [];
    for (let i = 0; i < WORKERS; i++) workerProcesses.push(await startRole('worker', env));
    children.push(...workerProcesses);
    components = {
      stub: () => [stub.child.pid ?? 0],
      api: () => [apiProcess.pid ?? 0],
      worker: () => workerProcesses.map((w) => w.pid ?? 0),
      postgres: () => pidsOf('postgres'),
      redis: () => pidsOf('redis-server'),
    };
    const api = new Pool(`http://127.0.0.1:${port}`, { connections: CONCURRENCY + 10, pipelining: 1 });
    const direct = new Pool(stub.url, { connections: CONCURRENCY + 10, pipelining: 1 });
    const { admin: token, sessionId } = await setUp(api, stub.url);
    const invokeBody = JSON.stringify({
      session_id: sessionId,
      model: MODEL,
      messages: [{ role: 'user', content: 'Say ok.' }],
      max_tokens: 16,
    });
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}` };

    const directCall = async () => {
      const res = await direct.request({
        method: 'POST',
        path: '/v1/chat/completions',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench-secret' },
        body: JSON.stringify({
          model: MODEL,
          messages: [{ role: 'user', content: 'Say ok.' }],
          max_tokens: 16,
        }),
      });
      await res.body.json();
      return res.statusCode === 200;
    };
    const syncInvoke = async () => {
      const res = await api.request({
        method: 'POST',
        path: '/v1/llm/invoke?wait=30',
        headers,
        body: invokeBody,
      });
      const body = (await res.body.json()) as { status: string };
      return res.statusCode === 200 && body.status === 'succeeded';
    };
    const asyncInvoke = async () => {
      const res = await api.request({ method: 'POST', path: '/v1/llm/invoke', headers, body: invokeBody });
      let body = (await res.body.json()) as { id: string; status: string };
      if (res.statusCode !== 202 && res.statusCode !== 200) return false;
      while (!['succeeded', 'failed', 'denied', 'cancelled'].includes(body.status)) {
        const poll = await api.request({
          method: 'GET',
          path: `/v1/llm/invocations/${body.id}?wait=30`,
          headers,
        });
        body = (await poll.body.json()) as typeof body;
      }
      return body.status === 'succeeded';
    };

    console.log(`node ${process.version}, ${SECONDS} s per row after 1 s of warm-up\n`);
    for (const [label, call] of [
      ['(a) direct to the stub', directCall],
      ['(b) governed invoke, wait (sync)', syncInvoke],
      ['(c) governed invoke, 202 + poll', asyncInvoke],
    ] as const) {
      if (args.only && !label.startsWith(`(${args.only})`)) continue;
      for (const callers of [1, CONCURRENCY]) report(await measure(label, callers, call));
    }
    await api.close();
    await direct.close();
  } finally {
    for (const child of children.reverse()) child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 1500));
    await admin.query(`drop database if exists ${database} with (force)`).catch(() => undefined);
    await admin.end();
    const redis = new Redis(REDIS_URL);
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await redis.del(...keys);
    } while (cursor !== '0');
    redis.disconnect();
  }
}

if (args.stub) void runStub();
else
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
