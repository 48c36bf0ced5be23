/**
 * `npm run bench:compile-turns -- [--seconds 5] [--compiles 0,1,2,4,8]`: what concurrent compiles of
 * policy sets at the pattern limit (compilePoliciesInTurns, as each process compiles an org's new
 * version) do to other work on the same event loop.
 *
 * For each count of compiles at once, that many orgs' sets compile over and over for --seconds
 * while a probe sends a "request" every 10 ms: ten round trips over loopback TCP to an echo server
 * in this process, about as many passes through the event loop as an invoke makes in the API. It
 * prints the requests' p50, p99 and maximum, and the sets compiled a second. No database needed.
 */
import { once } from 'node:events';
import { createServer, connect, type AddressInfo, type Socket } from 'node:net';
import { compilePoliciesInTurns } from '../domain/policy/compile-policies';
import type { PolicySet } from '../domain/policy/policy';
import { turnsEvery } from '../domain/next-turn';
import { benchOptions, exitWithUsage, positiveInt } from './bench-cli';
import { policySetAtLimit } from './heavy-sets';

const USAGE = `
npm run bench:compile-turns -- [--seconds 5] [--compiles 0,1,2,4,8]

Latency of small requests on the event loop while that many policy sets at the pattern limit
compile at once, in turns. No database needed.`;

const ROUND_TRIPS = 10;
const REQUEST_EVERY_MS = 10;

function args() {
  const { text } = benchOptions(USAGE, ['seconds', 'compiles']);
  const compiles = (text('compiles') ?? '0,1,2,4,8').split(',').map(Number);
  if (compiles.some((n) => !Number.isInteger(n) || n < 0))
    exitWithUsage(USAGE, '--compiles: counts separated by commas, such as 0,1,2,4');
  return { seconds: positiveInt(USAGE, '--seconds', text('seconds'), 5), compiles };
}

/** An echo server and a connection to it: each `roundTrip` passes through the event loop twice. */
async function echo(): Promise<{ roundTrip: () => Promise<void>; close: () => void }> {
  const server = createServer((socket) => socket.on('data', (chunk) => socket.write(chunk)));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const client: Socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
  client.setNoDelay(true);
  await once(client, 'connect');
  return {
    roundTrip: async () => {
      client.write('x');
      await once(client, 'data');
    },
    close: () => {
      client.destroy();
      server.close();
    },
  };
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;

async function row(sets: PolicySet[], seconds: number, roundTrip: () => Promise<void>): Promise<void> {
  const until = performance.now() + seconds * 1000;
  let compiled = 0;
  const compiling = sets.map(async (set) => {
    while (performance.now() < until) {
      await compilePoliciesInTurns(set, turnsEvery());
      compiled++;
    }
  });
  const latencies: number[] = [];
  while (performance.now() < until) {
    const started = performance.now();
    for (let i = 0; i < ROUND_TRIPS; i++) await roundTrip();
    latencies.push(performance.now() - started);
    await new Promise((resolve) => setTimeout(resolve, REQUEST_EVERY_MS));
  }
  await Promise.all(compiling);
  latencies.sort((a, b) => a - b);
  const ms = (n: number) => `${n.toFixed(1).padStart(7)} ms`;
  console.log(
    `${String(sets.length).padStart(3)} at once: ${String(latencies.length).padStart(4)} requests, ` +
      `p50 ${ms(percentile(latencies, 0.5))}  p99 ${ms(percentile(latencies, 0.99))}  ` +
      `max ${ms(latencies.at(-1) ?? NaN)};  ${(compiled / seconds).toFixed(1)} sets compiled a second`,
  );
}

async function main(): Promise<void> {
  const { seconds, compiles } = args();
  const most = Math.max(...compiles);
  console.log(`building ${most} sets at the pattern limit ...`);
  const sets = Array.from({ length: most }, (_, i) => policySetAtLimit(i + 1));
  const { roundTrip, close } = await echo();
  console.log(
    `node ${process.version}, ${seconds} s a row; a request is ${ROUND_TRIPS} loopback round trips, one every ${REQUEST_EVERY_MS} ms`,
  );
  for (const count of compiles) await row(sets.slice(0, count), seconds, roundTrip);
  close();
}

void main();
