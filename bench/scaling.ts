/**
 * `npm run bench:scaling -- [--seconds 8] [--concurrency 50] [--runtime node|tsx] [--warmup 15]`: the governed
 * sync invoke at `concurrency` callers on 1, 2 and 4 worker processes with 1 and 2 API processes,
 * each layout on a fresh stack, then one table: req/s, p50/p99 and CPU per call of each component.
 */
import { benchOptions, NEEDS_STORES, positiveInt } from './bench-cli';
import {
  DEFAULT_WARM_UP_SECONDS,
  cpuMsPerCall,
  measure,
  percentile,
  runtimeOf,
  setUpOrg,
  syncInvoker,
  withService,
  type Result,
} from './harness';

const USAGE = `
npm run bench:scaling -- [--seconds 8] [--concurrency 50] [--runtime node|tsx] [--warmup 15]

The governed sync invoke at --concurrency callers with 1, 2 and 4 worker processes behind 1 and
2 API processes (six fresh stacks, each measured --seconds after --warmup seconds of load), then
a table of req/s, p50/p99 and CPU per call of the API, the workers, PostgreSQL and Redis.

${NEEDS_STORES}`;

function args() {
  const { text } = benchOptions(USAGE, ['seconds', 'concurrency', 'runtime', 'warmup']);
  return {
    seconds: positiveInt(USAGE, '--seconds', text('seconds'), 8),
    concurrency: positiveInt(USAGE, '--concurrency', text('concurrency'), 50),
    runtime: runtimeOf(USAGE, text('runtime')),
    warmUpSeconds: positiveInt(USAGE, '--warmup', text('warmup'), DEFAULT_WARM_UP_SECONDS),
  };
}

const LAYOUTS = [1, 2].flatMap((apis) => [1, 2, 4].map((workers) => ({ apis, workers })));

const ms = (v: number) => v.toFixed(1);
const µs = (r: Result, ...names: string[]) => Math.round(cpuMsPerCall(r, names) * 1000);

async function main(): Promise<void> {
  const { seconds, concurrency, runtime, warmUpSeconds } = args();
  const lines: string[] = [
    '| APIs | workers | req/s | p50 ms | p99 ms | errors | CPU µs per call: API | workers | PostgreSQL | Redis | all four |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const [i, { apis, workers }] of LAYOUTS.entries()) {
    console.log(
      `[${i + 1}/${LAYOUTS.length}] ${apis} API, ${workers} worker(s): ${warmUpSeconds + seconds} s of load`,
    );
    const options = { apis, workers, connections: concurrency + 10, runtime, warmUpSeconds };
    await withService(options, async (service) => {
      const { admin, sessionId } = await setUpOrg(service);
      const r = await measure(
        service,
        seconds,
        'sync invoke',
        concurrency,
        syncInvoker(service.api, admin, sessionId),
      );
      lines.push(
        `| ${apis} | ${workers} | ${Math.round(r.done / r.seconds)} | ${ms(percentile(r.latencies, 0.5))} | ` +
          `${ms(percentile(r.latencies, 0.99))} | ${r.errors} | ${µs(r, 'api')} | ${µs(r, 'worker')} | ` +
          `${µs(r, 'postgres')} | ${µs(r, 'redis')} | ${µs(r, 'api', 'worker', 'postgres', 'redis')} |`,
      );
    });
  }
  console.log(
    `\nnode ${process.version}, ${concurrency} callers, ${seconds} s per layout after ${warmUpSeconds} s of warm-up\n`,
  );
  console.log(lines.join('\n'));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
