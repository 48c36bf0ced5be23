/**
 * `npm run bench:memory -- [--invokes 100000] [--concurrency 50] [--workers 1] [--runtime node|tsx]`:
 * the resident memory (RSS) of the API and each worker process at idle, then after `invokes`
 * governed sync invokes at `concurrency` callers and 10 s of quiet, to show the service does not
 * grow with the work it has done.
 */
import { readFileSync } from 'node:fs';
import { benchOptions, NEEDS_STORES, positiveInt } from './bench-cli';
import { runtimeOf, setUpOrg, syncInvoker, withService, type Service } from './harness';

const USAGE = `
npm run bench:memory -- [--invokes 100000] [--concurrency 50] [--workers 1] [--runtime node|tsx]

RSS of the API and each worker at idle, and after --invokes governed sync invokes at
--concurrency callers followed by 10 s of quiet.

${NEEDS_STORES}`;

function args() {
  const { text } = benchOptions(USAGE, ['invokes', 'concurrency', 'workers', 'runtime']);
  return {
    invokes: positiveInt(USAGE, '--invokes', text('invokes'), 100_000),
    concurrency: positiveInt(USAGE, '--concurrency', text('concurrency'), 50),
    workers: positiveInt(USAGE, '--workers', text('workers'), 1),
    runtime: runtimeOf(USAGE, text('runtime')),
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Resident set size in MiB, from /proc. */
function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  return kib / 1024;
}

function snapshot(service: Service): Map<string, number> {
  const sizes = new Map<string, number>();
  (service.components.api?.() ?? []).forEach((pid) => sizes.set('api', rssMiB(pid)));
  (service.components.worker?.() ?? []).forEach((pid, i) => sizes.set(`worker ${i + 1}`, rssMiB(pid)));
  return sizes;
}

/** The API's V8 heap in use, in MiB, from its /metrics (open on the loopback bind the bench uses). */
async function apiHeapMiB(service: Service): Promise<number> {
  const res = await service.api.request({ method: 'GET', path: '/metrics' });
  const text = await res.body.text();
  return Number(/^nodejs_heap_size_used_bytes (\S+)$/m.exec(text)?.[1] ?? NaN) / 1024 / 1024;
}

/** One line of progress: calls done, their rate, and the memory of the API and the workers. */
async function progress(service: Service, done: number, total: number, t0: number): Promise<void> {
  const rate = Math.round(done / ((performance.now() - t0) / 1000));
  const rss = [...snapshot(service)].map(([name, mib]) => `${name} ${mib.toFixed(0)}`).join(', ');
  const heap = (await apiHeapMiB(service)).toFixed(0);
  console.log(`  ${done} of ${total} invokes (${rate}/s); RSS MiB: ${rss}; API heap used ${heap} MiB`);
}

/** `total` calls over `callers` concurrent loops, with a progress line every tenth. */
async function drive(
  service: Service,
  total: number,
  callers: number,
  call: () => Promise<boolean>,
): Promise<number> {
  let started = 0;
  let failed = 0;
  let done = 0;
  const tenth = Math.max(1, Math.floor(total / 10));
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (started < total) {
        started++;
        if (!(await call().catch(() => false))) failed++;
        if (++done % tenth === 0) await progress(service, done, total, t0);
      }
    }),
  );
  return failed;
}

async function main(): Promise<void> {
  const { invokes, concurrency, workers, runtime } = args();
  await withService({ workers, connections: concurrency + 10, runtime }, async (service) => {
    const { admin, sessionId } = await setUpOrg(service);
    await sleep(5000);
    const idle = snapshot(service);
    console.log(`running ${invokes} governed invokes at ${concurrency} callers ...`);
    const failed = await drive(service, invokes, concurrency, syncInvoker(service.api, admin, sessionId));
    await sleep(10_000);
    const after = snapshot(service);
    console.log(`\nnode ${process.version}, ${runtime}, ${failed} of ${invokes} invokes failed`);
    console.log('process      RSS idle   RSS after   growth');
    for (const [name, before] of idle) {
      const now = after.get(name) ?? NaN;
      console.log(
        `${name.padEnd(12)} ${before.toFixed(1).padStart(7)} MiB ${now.toFixed(1).padStart(7)} MiB ${(now - before).toFixed(1).padStart(7)} MiB`,
      );
    }
  });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
