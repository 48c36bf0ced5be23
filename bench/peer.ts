/**
 * `npm run bench:peer -- --peers <dir>`: the ungoverned peer of `../shared/peers` (the Portkey
 * gateway) under `npm run bench`'s own load generator and rows, so that the open loop's target can
 * be read beside a proxy that runs in one process and batches nothing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Pool } from 'undici';
import { freePort } from '../infra/embedded/free-port';
import { benchOptions, exitWithUsage, positiveInt } from './bench-cli';
import {
  DEFAULT_WARM_UP_SECONDS,
  measure,
  MODEL,
  openLoopRows,
  report,
  startStub,
  type Service,
} from './harness';

const USAGE = `
npm run bench:peer -- --peers <dir> [--seconds 10] [--concurrency 50] [--warmup 15]

Runs the Portkey gateway of the side-by-side benchmark (a copy of ../shared/peers in which
\`npm install\` has run, given as --peers) in front of the bench's zero-latency stub, and measures
it as \`npm run bench -- --only b --open-loop\` measures the governed invoke: 1 caller, then the
closed loop at --concurrency callers for the maximum, then fixed arrival rates of 50% and 80% of
that maximum, each latency counted from when its call was due. Prints req/s, p50/p99 and CPU and
read/write syscalls per call of the gateway, the stub and the load generator. Needs neither
PostgreSQL nor Redis.`;

const GATEWAY = ['node_modules', '@portkey-ai', 'gateway', 'build', 'start-server.js'];

function args() {
  const { text } = benchOptions(USAGE, ['peers', 'seconds', 'concurrency', 'warmup']);
  const peers = text('peers');
  if (!peers)
    exitWithUsage(USAGE, '--peers <dir> is required: a copy of ../shared/peers with `npm install` run');
  if (!existsSync(join(peers, ...GATEWAY)))
    exitWithUsage(USAGE, `no gateway in ${resolve(peers)}: run \`npm install\` there first`);
  return {
    peers: resolve(peers),
    seconds: positiveInt(USAGE, '--seconds', text('seconds'), 10),
    concurrency: positiveInt(USAGE, '--concurrency', text('concurrency'), 50),
    warmUpSeconds: positiveInt(USAGE, '--warmup', text('warmup'), DEFAULT_WARM_UP_SECONDS),
  };
}

/** The gateway, bound to 127.0.0.1 by the peers' preload (its command line has no host option). */
async function startGateway(peers: string, port: number): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    ['-r', join(peers, 'loopback.cjs'), join(peers, ...GATEWAY), `--port=${port}`, '--headless'],
    { cwd: peers, stdio: 'ignore' },
  );
  for (let tries = 0; tries < 100; tries++) {
    if (child.exitCode !== null) throw new Error(`the gateway exited with ${child.exitCode}`);
    const up = await fetch(`http://127.0.0.1:${port}/`).then(
      () => true,
      () => false,
    );
    if (up) return child;
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill();
  throw new Error('the gateway did not answer within 10 s');
}

/** One chat completion through the gateway to the stub; it must answer 200. */
function gatewayCall(gateway: Pool, stubUrl: string): () => Promise<boolean> {
  const body = JSON.stringify({
    model: MODEL,
    messages: [{ role: 'user', content: 'Say ok.' }],
    max_tokens: 16,
  });
  const headers = {
    'content-type': 'application/json',
    authorization: 'Bearer sk-bench-secret',
    'x-portkey-provider': 'openai',
    'x-portkey-custom-host': `${stubUrl}/v1`,
  };
  return async () => {
    const res = await gateway.request({ method: 'POST', path: '/v1/chat/completions', headers, body });
    await res.body.dump();
    return res.statusCode === 200;
  };
}

async function main(): Promise<void> {
  const options = args();
  const stub = await startStub();
  const port = await freePort();
  console.log(`starting the stub and the Portkey gateway of ${options.peers} ...`);
  const gateway = await startGateway(options.peers, port).catch((err: unknown) => {
    stub.child.kill();
    throw err;
  });
  // The open loop keeps more calls in flight than the closed loop's callers when it queues.
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: 512, pipelining: 1 });
  const service: Service = {
    api: pool,
    stubUrl: stub.url,
    components: { stub: () => [stub.child.pid ?? 0], gateway: () => [gateway.pid ?? 0] },
    metricsUrls: [],
    warmUpSeconds: options.warmUpSeconds,
    warm: false,
  };
  try {
    const call = gatewayCall(pool, stub.url);
    console.log(`node ${process.version}, ${options.seconds} s per row\n`);
    report(await measure(service, options.seconds, 'Portkey gateway', 1, call));
    await openLoopRows(service, options.seconds, options.concurrency, 'Portkey', call);
  } finally {
    await pool.close();
    gateway.kill();
    stub.child.kill();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
