/**
 * What the service benchmarks share: a fresh database and Redis prefix, the stub provider, one API
 * and N worker processes (`node dist/main.js --role api|worker`, or tsx with `--runtime tsx`), an org ready to invoke, a closed-loop
 * load loop with latency percentiles and CPU accounting per process, and the cleanup.
 */
import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { Client } from 'pg';
import { BalancedPool, Pool, type Dispatcher } from 'undici';
import { freePort } from '../infra/embedded/free-port';
import { benchOptions, exitWithUsage, positiveInt } from './bench-cli';
import { OutputTail } from './output-tail';
import { GcTrace, gcLine, gcPerCall, sumTallies, type GcTally } from './gc-trace';
import { jobWaitLine, readJobWait, waitsDuring, type WaitTally } from './job-wait';
import { statementLines, StatementStats, type StatementRow } from './pg-statements';
import { deleteKeysWithPrefix } from '../test/support/redis-keys';

const ADMIN_URL =
  process.env.BENCH_DATABASE_ADMIN_URL ?? 'postgres://postgres:postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const ROOT = join(__dirname, '..');
/** How long the first load on a fresh stack runs before anything is counted (see warmUp). */
export const DEFAULT_WARM_UP_SECONDS = 15;
const STACK_WARM_UP_CALLERS = 50;
/** The model the stub answers as. */
export const MODEL = 'bench-model';

/**
 * The options every bench takes: `--seconds` per row, `--concurrency` callers, `--workers` worker
 * processes (0: the API processes run the workers too, `--role all` as `npm start` runs) and `--apis`
 * API processes, `--warmup` seconds of load before the first figure, and `--only` to
 * run one part (for profiling it).
 */
export function benchArgs(usage: string, extra: readonly string[] = []) {
  const { text, flag } = benchOptions(
    usage,
    ['seconds', 'concurrency', 'workers', 'apis', 'warmup', 'only', 'runtime', ...extra],
    ['open-loop'],
  );
  return {
    /** The value of one of `extra`, this bench's own options. */
    text,
    seconds: positiveInt(usage, '--seconds', text('seconds'), 10),
    concurrency: positiveInt(usage, '--concurrency', text('concurrency'), 50),
    workers: positiveInt(usage, '--workers', text('workers'), 1, 0),
    apis: positiveInt(usage, '--apis', text('apis'), 1),
    warmUpSeconds: positiveInt(usage, '--warmup', text('warmup'), DEFAULT_WARM_UP_SECONDS),
    only: text('only'),
    runtime: runtimeOf(usage, text('runtime')),
    openLoop: flag('open-loop'),
  };
}

/** How the service runs: `node` the compiled build (as `npm start` does), `tsx` the sources. */
export type Runtime = 'node' | 'tsx';

export function runtimeOf(usage: string, text: string | undefined): Runtime {
  if (text !== undefined && text !== 'node' && text !== 'tsx')
    exitWithUsage(usage, `--runtime must be node or tsx, not "${text}"`);
  const runtime = (text ?? 'node') as Runtime;
  if (runtime === 'node' && !existsSync(join(ROOT, 'dist', 'main.js')))
    exitWithUsage(usage, 'no compiled build in dist/: run `npm run build` first (or pass --runtime tsx)');
  return runtime;
}

// --- the stub provider (a child process, so its CPU is its own) ---------------------------------

export function startStub(): Promise<{ url: string; child: ChildProcess }> {
  const child = fork(join(__dirname, 'stub-provider.ts'), [], { execArgv: ['--import', 'tsx'] });
  return new Promise((resolve) =>
    child.on('message', (port) => resolve({ url: `http://127.0.0.1:${String(port)}`, child })),
  );
}

// --- the service ------------------------------------------------------------------------------------

function startRole(
  role: 'all' | 'api' | 'worker',
  env: Record<string, string>,
  runtime: Runtime,
): Promise<ChildProcess> {
  // BENCH_CPU_PROF=<dir>: write a V8 CPU profile of each service process there (open in Chrome DevTools).
  const profile = process.env.BENCH_CPU_PROF
    ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`]
    : [];
  // BENCH_NODE_FLAGS: more node options for the service's processes (--require a probe, a GC flag).
  const flags = [
    ...(process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean),
    ...(process.env.BENCH_GC ? ['--trace-gc-nvp'] : []),
  ];
  const entry = runtime === 'node' ? ['dist/main.js'] : ['--import', 'tsx', 'main.ts'];
  const child = spawn(process.execPath, [...flags, ...profile, ...entry, '--role', role], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = new OutputTail();
  return new Promise((resolve, reject) => {
    const onData = (d: Buffer) => {
      if (output.add(String(d))) resolve(child);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    if (process.env.BENCH_GC)
      child.stdout?.on('data', (d: Buffer) => gcTrace.feed(child.pid ?? 0, String(d)));
    child.once('exit', (code) => reject(new Error(`${role} exited with ${code}:\n${output.text}`)));
  });
}

// --- where the CPU goes --------------------------------------------------------------------------------

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** CPU milliseconds (user + system) a process has used, from /proc; 0 once it is gone. */
export function cpuMs(pid: number | 'self'): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

export const pidsOf = (name: string): number[] => {
  try {
    return execFileSync('pgrep', ['-x', name], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
};

/** The processes whose CPU each row reports: ours by pid, PostgreSQL and Redis by name. */
type Components = Record<string, () => number[]>;

/** `read` of this process (as `bench`) and of each component, summed over its processes. */
function snapshot(
  components: Components,
  read: (pid: number | 'self') => number,
  leaveOut: string[] = [],
): Record<string, number> {
  const taken: Record<string, number> = { bench: read('self') };
  for (const [name, pids] of Object.entries(components))
    if (!leaveOut.includes(name)) taken[name] = pids().reduce((s, pid) => s + read(pid), 0);
  return taken;
}

/**
 * read() and write() calls a process has made (syscr + syscw in /proc/<pid>/io); 0 once it is
 * gone. Node and Redis move every socket message with them, so per call this counts round trips
 * and unbatched messages, and unlike CPU time it does not drift with the machine.
 */
function syscalls(pid: number | 'self'): number {
  try {
    const io = readFileSync(`/proc/${pid}/io`, 'utf8');
    const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)$`, 'm').exec(io)?.[1] ?? 0);
    return field('syscr') + field('syscw');
  } catch {
    return 0;
  }
}

/**
 * CPU and syscall counters of every component, taken together. PostgreSQL has no syscall count:
 * its backends use recv() and send(), which /proc/<pid>/io does not count.
 */
const usageSnapshot = (components: Components) => ({
  cpu: snapshot(components, cpuMs),
  syscalls: snapshot(components, syscalls, ['postgres']),
  gc: process.env.BENCH_GC ? gcSnapshot(components) : undefined,
});

/** With BENCH_GC: the tallies of the service's own processes (the ones run with --trace-gc-nvp). */
const gcTrace = new GcTrace();
const GC_TRACED = ['api', 'worker'];
const gcSnapshot = (components: Components): Record<string, GcTally> =>
  Object.fromEntries(
    GC_TRACED.filter((name) => components[name]?.().length).map((name) => [
      name,
      sumTallies((components[name]?.() ?? []).map((pid) => gcTrace.read(pid))),
    ]),
  );

// --- load ----------------------------------------------------------------------------------------------

export interface Result {
  label: string;
  callers: number;
  /** Open loop: the arrival rate offered, per second (callers is then 0). */
  offered?: number;
  done: number;
  errors: number;
  seconds: number;
  latencies: number[];
  /** CPU milliseconds per completed call, per component. */
  cpuPerCall: Record<string, number>;
  /** read() and write() calls per completed call, per component (usageSnapshot). */
  syscallsPerCall: Record<string, number>;
  /** With BENCH_PG_STATEMENTS: what PostgreSQL ran during the row. */
  statements?: StatementRow[];
  /** With BENCH_GC: what each service component's collector did, per completed call. */
  gcPerCall?: Record<string, GcTally>;
  /** The invoke jobs' waits for a worker during the row (job-wait.ts). */
  jobWait?: WaitTally;
}

/**
 * How many of the machine's cores the processes a row counts kept busy: their CPU per call times
 * the calls per second. Near the core count, latency is queueing (the open loop at 80%, where a
 * call costs about twice what it does in the closed loop). Kernel threads are not counted.
 */
export function coresBusy(r: Pick<Result, 'cpuPerCall' | 'done' | 'seconds'>): number {
  return (cpuMsPerCall(r) * r.done) / r.seconds / 1000;
}

/** A row's CPU milliseconds per call over the named components: all it counted unless told. */
export const cpuMsPerCall = (
  r: Pick<Result, 'cpuPerCall'>,
  names: string[] = Object.keys(r.cpuPerCall),
): number => names.reduce((sum, name) => sum + (r.cpuPerCall[name] ?? 0), 0);

export const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;

/**
 * The first load on a fresh stack runs for the stack's warm-up (--warmup, 15 s unless told), later
 * ones for 1 s. Measured on the 2-core machine: the first 6 s after 1 s of warm-up cost the API
 * 2.5 ms of CPU per invoke, the same load 15 s later 1.1 to 1.4 ms (even the stub's cost fell
 * from 0.44 to 0.10 ms), so figures taken cold are mostly the JIT's.
 */
export async function warmUp(service: Service, callers: number, once: () => Promise<boolean>): Promise<void> {
  const ms = service.warm ? 1000 : service.warmUpSeconds * 1000;
  // The stack warms under load whatever the first row's callers: 1 caller would take minutes.
  const load = service.warm ? callers : Math.max(callers, STACK_WARM_UP_CALLERS);
  if (!service.warm) console.error(`... warming the stack up: ${service.warmUpSeconds} s of load`);
  service.warm = true;
  const until = performance.now() + ms;
  while (performance.now() < until) await Promise.all(Array.from({ length: load }, once));
}

/** What each component spent per completed call between two snapshots. */
const perCall = (before: Record<string, number>, after: Record<string, number>, calls: number) =>
  Object.fromEntries(
    Object.keys(after).map((k) => [k, ((after[k] ?? 0) - (before[k] ?? 0)) / Math.max(1, calls)]),
  );

/** The per-call figures of a Result, from the snapshots before and after its load. */
const usagePerCall = (
  before: ReturnType<typeof usageSnapshot>,
  after: ReturnType<typeof usageSnapshot>,
  calls: number,
) => ({
  cpuPerCall: perCall(before.cpu, after.cpu, calls),
  syscallsPerCall: perCall(before.syscalls, after.syscalls, calls),
  ...(before.gc && after.gc
    ? {
        gcPerCall: Object.fromEntries(
          Object.entries(after.gc).map(([name, t]) => [name, gcPerCall(before.gc?.[name] ?? t, t, calls)]),
        ),
      }
    : {}),
});

/** `callers` closed loops calling `once` for `seconds` after a warm-up (warmUp); false or a throw is an error. */
export async function measure(
  service: Service,
  seconds: number,
  label: string,
  callers: number,
  once: () => Promise<boolean>,
): Promise<Result> {
  await warmUp(service, callers, once);
  const latencies: number[] = [];
  let errors = 0;
  const counted = await countFrom(service);
  const started = performance.now();
  const stopAt = started + seconds * 1000;
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
  const elapsed = (performance.now() - started) / 1000;
  const usage = await counted(latencies.length);
  latencies.sort((a, b) => a - b);
  return { label, callers, done: latencies.length, errors, seconds: elapsed, latencies, ...usage };
}

/**
 * Starts counting a row: CPU and syscalls of every process and, with BENCH_PG_STATEMENTS, what
 * PostgreSQL ran. The returned function ends the count, per completed call.
 */
async function countFrom(service: Service) {
  await service.statements?.reset();
  // A peer (bench:peer) serves no metrics of ours: its rows have no job wait.
  const urls = service.metricsUrls;
  const waitedBefore = urls.length ? await readJobWait(urls) : null;
  const before = usageSnapshot(service.components);
  return async (done: number) => ({
    ...usagePerCall(before, usageSnapshot(service.components), done),
    ...(waitedBefore ? { jobWait: waitsDuring(waitedBefore, await readJobWait(urls)) } : {}),
    statements: await service.statements?.read(),
  });
}

/**
 * Open loop: calls start at a fixed rate whatever the answers do, and each latency counts from
 * when its call was due, so queueing shows (a closed loop slows its callers down and hides it).
 * Like a closed-loop row, it first runs 1 s at its own load, uncounted: the row before may have
 * left the stack saturated, and draining that is not this rate's latency.
 */
export async function measureOpenLoop(
  service: Service,
  seconds: number,
  label: string,
  perSecond: number,
  once: () => Promise<boolean>,
): Promise<Result> {
  await offer(1, perSecond, once);
  const counted = await countFrom(service);
  const { timeline, errors, elapsed } = await offer(seconds, perSecond, once);
  const usage = await counted(timeline.length);
  if (process.env.BENCH_TIMELINE)
    writeTimeline(`${process.env.BENCH_TIMELINE}-${Math.round(perSecond)}.json`, timeline);
  const latencies = timeline.map(([, latency]) => latency).sort((a, b) => a - b);
  return {
    label,
    callers: 0,
    offered: perSecond,
    done: latencies.length,
    errors,
    seconds: elapsed,
    latencies,
    ...usage,
  };
}

/**
 * The open loop's rows: the closed loop at `callers` for the maximum, then fixed arrival rates of
 * 50% and 80% of it, each labelled after `name`.
 */
export async function openLoopRows(
  service: Service,
  seconds: number,
  callers: number,
  name: string,
  call: () => Promise<boolean>,
): Promise<void> {
  const closed = await measure(service, seconds, `${name} closed loop, for the maximum`, callers, call);
  report(closed);
  const maximum = closed.done / closed.seconds;
  for (const share of [0.5, 0.8])
    report(
      await measureOpenLoop(
        service,
        seconds,
        `${name} open loop, ${share * 100}% of it`,
        maximum * share,
        call,
      ),
    );
}

/** Starts calls at `perSecond` for `seconds`; each answered call's [ms since start it was due, latency]. */
async function offer(seconds: number, perSecond: number, once: () => Promise<boolean>) {
  const timeline: [number, number][] = [];
  let errors = 0;
  const calls: Promise<void>[] = [];
  const started = performance.now();
  for (let i = 0; i < Math.round(perSecond * seconds); i++) {
    const due = started + (i * 1000) / perSecond;
    const early = due - performance.now();
    if (early >= 1) await new Promise((r) => setTimeout(r, early));
    calls.push(
      once().then(
        (ok) => (ok ? void timeline.push([due - started, performance.now() - due]) : void errors++),
        () => void errors++,
      ),
    );
  }
  await Promise.all(calls);
  return { timeline, errors, elapsed: (performance.now() - started) / 1000 };
}

/** BENCH_TIMELINE=<prefix>: each open-loop row's calls as JSON, to see whether a tail is stalls or queueing. */
function writeTimeline(path: string, timeline: [number, number][]): void {
  writeFileSync(path, JSON.stringify(timeline.sort((a, b) => a[0] - b[0])));
  console.error(`... wrote ${timeline.length} calls' [due ms, latency ms] to ${path}`);
}

export function report(r: Result): void {
  const ms = (v: number) => v.toFixed(2).padStart(8);
  const load = r.offered ? `at ${Math.round(r.offered)}/s` : `${r.callers} callers`;
  console.log(
    `${r.label.padEnd(34)} ${load.padStart(11)} ${Math.round(r.done / r.seconds)
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
  console.log(`${''.padEnd(34)} cores busy: ${coresBusy(r).toFixed(2)} of ${availableParallelism()}`);
  const calls = Object.entries(r.syscallsPerCall)
    .filter(([, n]) => n > 0)
    .map(([name, n]) => `${name} ${n.toFixed(1)}`)
    .join('  ');
  console.log(`${''.padEnd(34)} read/write syscalls per call: ${calls}`);
  if (r.jobWait) console.log(`${''.padEnd(34)} ${jobWaitLine(r.jobWait)}`);
  if (r.gcPerCall) console.log(`${''.padEnd(34)} ${gcLine(r.gcPerCall)}`);
  if (r.statements)
    for (const line of statementLines(r.statements, r.done)) console.log(`${''.padEnd(34)} ${line}`);
}

// --- the API --------------------------------------------------------------------------------------------

export async function json(
  pool: Dispatcher,
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

/** A new org with a credential for the stub, an agent, the model's price and an open session. */
export async function setUpOrg(service: Service) {
  const { api, stubUrl } = service;
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
  return { admin, agentId: agent.body.id as string, sessionId: session.body.id as string };
}

const VOCABULARY = (
  'the a an of to in and or for with on at by from as is are was be this that it its which ' +
  'agent model session budget policy invoice customer report summary table field value error ' +
  'request answer token cost price account order refund payment ticket support team release ' +
  'build test deploy service queue worker database index query record change review approve ' +
  'deny limit rate window key secret credential provider region audit entry chain hash verify ' +
  'please explain why how what when where should could would must never always only also then ' +
  'first last next before after during between under over into about against without within'
).split(' ');

/**
 * The user's message of every call: a short one, or about `bytes` bytes of words drawn from a
 * vocabulary of 107 (the same text every run), which compresses about as prose does: a repeated
 * sentence would make PostgreSQL's compression of it look far cheaper than a real prompt's.
 */
export function promptOf(bytes?: number): string {
  if (!bytes) return 'Say ok.';
  let seed = 12345;
  const words: string[] = [];
  for (let length = 0; length < bytes;) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    const word = VOCABULARY[seed % VOCABULARY.length] as string;
    words.push(seed % 11 === 0 ? `${word}.` : word);
    length += word.length + 1;
  }
  return words.join(' ').slice(0, bytes);
}

/** The body of every governed invoke the benches send. */
export const invokeBodyOf = (sessionId: string, prompt = promptOf()): string =>
  JSON.stringify({
    session_id: sessionId,
    model: MODEL,
    messages: [{ role: 'user', content: prompt }],
    max_tokens: 16,
  });

/** A governed invoke with `wait` (sync) that must succeed: `npm run bench`'s row (b). */
export function syncInvoker(
  api: Dispatcher,
  token: string,
  sessionId: string,
  prompt?: string,
): () => Promise<boolean> {
  const body = invokeBodyOf(sessionId, prompt);
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}` };
  return async () => {
    const res = await api.request({ method: 'POST', path: '/v1/llm/invoke?wait=30', headers, body });
    const answer = (await res.body.json()) as { status: string };
    return res.statusCode === 200 && answer.status === 'succeeded';
  };
}

// --- one run: the processes, then the cleanup ----------------------------------------------------------

export interface Service {
  /** Keep-alive connections to the API processes (requests spread over them), sized for the callers. */
  api: Dispatcher;
  stubUrl: string;
  components: Components;
  /** Every service process's /metrics base URL (the APIs', and each worker's own port). */
  metricsUrls: string[];
  /** The first measurement's warm-up, in seconds; `warm` once it has run. */
  warmUpSeconds: number;
  warm: boolean;
  /** BENCH_PG_STATEMENTS=1: PostgreSQL's statements, counted per row (pg-statements.ts). */
  statements?: StatementStats;
}

/**
 * Runs `body` against a fresh stack: the stub, `apis` API processes (1 unless told) and `workers`
 * worker processes on a new database and Redis prefix; afterwards stops them and drops the
 * database and the prefix's keys.
 */
export async function withService(
  options: { workers: number; connections: number; runtime: Runtime; apis?: number; warmUpSeconds?: number },
  body: (service: Service) => Promise<void>,
): Promise<void> {
  const database = `cp_bench_${randomBytes(5).toString('hex')}`;
  const prefix = `cpbench_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`create database ${database}`);
  const dbUrl = new URL(ADMIN_URL);
  dbUrl.pathname = `/${database}`;
  const children: ChildProcess[] = [];
  let statements: StatementStats | undefined;
  try {
    if (process.env.BENCH_PG_STATEMENTS) statements = await StatementStats.open(dbUrl.toString());
    const stub = await startStub();
    children.push(stub.child);
    const apis = options.apis ?? 1;
    const env = {
      DATABASE_URL: dbUrl.toString(),
      REDIS_URL,
      CP_REDIS_PREFIX: prefix,
      LOG_LEVEL: 'info',
      NODE_ENV: 'development',
      CP_MASTER_KEY: randomBytes(32).toString('base64'),
      CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true',
      CP_RATE_LIMIT_PER_MINUTE: '1000000',
    };
    const layout = options.workers
      ? `${apis} API and ${options.workers} worker process(es)`
      : `${apis} process(es) running the API and the workers`;
    console.log(
      `starting the stub, ${layout} (${options.runtime === 'node' ? 'node dist/main.js' : 'tsx main.ts'}) on ${database} ...`,
    );
    // One API first: it applies migrations before the others connect.
    const apiProcesses: ChildProcess[] = [];
    const apiUrls: string[] = [];
    for (let i = 0; i < apis; i++) {
      const port = await freePort();
      const role = options.workers ? 'api' : 'all';
      const child = await startRole(role, { ...env, PORT: String(port) }, options.runtime);
      apiProcesses.push(child);
      children.push(child);
      apiUrls.push(`http://127.0.0.1:${port}`);
    }
    const workerProcesses: ChildProcess[] = [];
    const metricsUrls = [...apiUrls];
    for (let i = 0; i < options.workers; i++) {
      const port = await freePort();
      const child = await startRole(
        'worker',
        { ...env, CP_WORKER_METRICS_PORT: String(port) },
        options.runtime,
      );
      workerProcesses.push(child);
      children.push(child);
      metricsUrls.push(`http://127.0.0.1:${port}`);
    }
    const components: Components = {
      stub: () => [stub.child.pid ?? 0],
      api: () => apiProcesses.map((a) => a.pid ?? 0),
      worker: () => workerProcesses.map((w) => w.pid ?? 0),
      postgres: () => pidsOf('postgres'),
      redis: () => pidsOf('redis-server'),
    };
    const poolOptions = { connections: options.connections, pipelining: 1 };
    const api =
      apis === 1
        ? new Pool(apiUrls[0] as string, poolOptions)
        : new BalancedPool(apiUrls, { ...poolOptions, connections: Math.ceil(options.connections / apis) });
    try {
      const warmUpSeconds = options.warmUpSeconds ?? DEFAULT_WARM_UP_SECONDS;
      await body({ api, stubUrl: stub.url, components, metricsUrls, warmUpSeconds, warm: false, statements });
    } finally {
      await api.close();
    }
  } finally {
    await statements?.close();
    for (const child of children.reverse()) child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 1500));
    await admin.query(`drop database if exists ${database} with (force)`).catch(() => undefined);
    await admin.end();
    await dropKeys(prefix);
  }
}

async function dropKeys(prefix: string): Promise<void> {
  const redis = new Redis(REDIS_URL);
  await deleteKeysWithPrefix(redis, prefix);
  redis.disconnect();
}
