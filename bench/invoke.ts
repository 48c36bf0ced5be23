/**
 * `npm run bench -- [--seconds 10] [--concurrency 50] [--workers 1] [--apis 1]`: the governed invoke path
 * against a local OpenAI-compatible stub with zero latency, everything on this machine.
 *
 * Starts the stub (own process), the API process(es) and N worker processes (`node dist/main.js --role
 * api|worker`) on a fresh database and Redis prefix, then measures, at 1 caller and at
 * `concurrency` callers: (a) direct calls to the stub, the floor; (b) governed invokes with
 * `wait` (sync); (c) async invokes (202, then GET with wait until finished). Prints throughput
 * and p50/p99 latency of each, and cleans up.
 */
import { Pool } from 'undici';
import {
  benchArgs,
  measure,
  openLoopRows,
  invokeBodyOf,
  MODEL,
  promptOf,
  report,
  setUpOrg,
  syncInvoker,
  warmUp,
  withService,
} from './harness';
import { NEEDS_STORES, positiveInt } from './bench-cli';

// --only a, b or c runs those rows only (for profiling one scenario)
const USAGE = `
npm run bench -- [--seconds 10] [--concurrency 50] [--workers 1] [--apis 1] [--only a|b|c]
  [--runtime node|tsx] [--open-loop] [--warmup 15] [--prompt-bytes 8192]

The governed invoke path against a local zero-latency stub: (a) direct to the stub, (b) governed
invoke with wait, (c) invoke then poll; at 1 caller and at --concurrency callers, with --workers
worker processes behind --apis API processes (requests spread over them; --workers 0: the API
processes run the workers too, as npm start does). Prints req/s, p50/p99,
and CPU and read/write syscalls per call of every process (syscalls: all but PostgreSQL, whose
recv/send /proc does not count). The first row runs --warmup seconds of load before it counts
(the processes' JIT), later rows 1 s. The service runs compiled (node dist/main.js, as npm start
does; run npm run build first) or, with --runtime tsx, from the sources. --open-loop then offers
(b) at fixed arrival rates of 50% and 80% of the most the closed loop reached, each latency
counted from when its call was due (1 s at each rate first, uncounted); BENCH_TIMELINE=<prefix>
writes each rate's calls, [due ms, latency ms], to <prefix>-<rate>.json. BENCH_PG_STATEMENTS=1
adds, per row, PostgreSQL's executor time and WAL per call for each statement (it needs the
pg_stat_statements extension loaded in the server, and says how when it is not). BENCH_GC=1 runs
the service's processes with --trace-gc-nvp and adds, per row, what each one's garbage collector
did per call: KB promoted to the old generation, pause, scavenges and mark-compacts.
BENCH_NODE_FLAGS="<flags>" passes more node options to them (--require a probe, a GC flag). --prompt-bytes
makes every call's user message prose of that many bytes (rows a, b and c alike) instead of
"Say ok.".

${NEEDS_STORES}`;
const args = benchArgs(USAGE, ['prompt-bytes']);
const PROMPT = promptOf(positiveInt(USAGE, '--prompt-bytes', args.text('prompt-bytes'), 0));
const SECONDS = args.seconds;
const CONCURRENCY = args.concurrency;
const WORKERS = args.workers;

async function main(): Promise<void> {
  await withService(
    {
      workers: WORKERS,
      apis: args.apis,
      connections: args.openLoop ? 512 : CONCURRENCY + 10,
      runtime: args.runtime,
      warmUpSeconds: args.warmUpSeconds,
    },
    async (service) => {
      const { api } = service;
      const direct = new Pool(service.stubUrl, { connections: CONCURRENCY + 10, pipelining: 1 });
      const { admin: token, sessionId } = await setUpOrg(service);
      const invokeBody = invokeBodyOf(sessionId, PROMPT);
      const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}` };

      const directCall = async () => {
        const res = await direct.request({
          method: 'POST',
          path: '/v1/chat/completions',
          headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench-secret' },
          body: JSON.stringify({
            model: MODEL,
            messages: [{ role: 'user', content: PROMPT }],
            max_tokens: 16,
          }),
        });
        await res.body.json();
        return res.statusCode === 200;
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

      // The stack's warm-up is of the service, whichever row comes first.
      if (args.only !== 'a') await warmUp(service, CONCURRENCY, syncInvoker(api, token, sessionId, PROMPT));
      console.log(
        `node ${process.version}, ${SECONDS} s per row; ${args.warmUpSeconds} s of warm-up first, then 1 s per row\n`,
      );
      for (const [label, call] of [
        ['(a) direct to the stub', directCall],
        ['(b) governed invoke, wait (sync)', syncInvoker(api, token, sessionId, PROMPT)],
        ['(c) governed invoke, 202 + poll', asyncInvoke],
      ] as const) {
        if (args.only && !label.startsWith(`(${args.only})`)) continue;
        for (const callers of [1, CONCURRENCY]) report(await measure(service, SECONDS, label, callers, call));
      }
      if (args.openLoop)
        await openLoopRows(service, SECONDS, CONCURRENCY, '(b)', syncInvoker(api, token, sessionId, PROMPT));
      await direct.close();
    },
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
