/**
 * `npm run bench:chat -- [--seconds 10] [--concurrency 50] [--workers 1]`: the OpenAI-compatible
 * endpoint against the same local stub as `npm run bench`, everything on this machine. Rows, at 1
 * caller and at `concurrency` callers: (a) direct Chat Completions to the stub; (b) governed
 * `POST /v1/chat/completions`; (c) direct, streamed; (d) governed, streamed. Streamed rows also
 * print the time to first byte (the first `data:` event), the figure a streaming agent feels.
 * Needs PostgreSQL on 127.0.0.1:5432 and Redis on 127.0.0.1:6379 (BENCH_DATABASE_ADMIN_URL,
 * BENCH_REDIS_URL point elsewhere).
 */
import { Pool, type Dispatcher } from 'undici';
import { benchArgs, measure, MODEL, percentile, report, setUpOrg, warmUp, withService } from './harness';
import { NEEDS_STORES } from './bench-cli';

const args = benchArgs(`
npm run bench:chat -- [--seconds 10] [--concurrency 50] [--workers 1] [--only a|b|c|d] [--runtime node|tsx]
  [--warmup 15]

POST /v1/chat/completions beside the stub: (a) direct, (b) governed, (c) direct streamed,
(d) governed streamed; streamed rows also print the time to first byte. --workers 0: the API
process runs the workers too, as npm start does.

${NEEDS_STORES}`);

const body = (stream: boolean) =>
  JSON.stringify({
    model: MODEL,
    messages: [{ role: 'user', content: 'Say ok.' }],
    max_tokens: 16,
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  });

/** One Chat Completions call; for a stream, records when its first event arrived. */
function caller(
  pool: Dispatcher,
  path: string,
  headers: Record<string, string>,
  stream: boolean,
  ttfb: number[],
) {
  return async () => {
    const t0 = performance.now();
    const res = await pool.request({ method: 'POST', path, headers, body: body(stream) });
    let first = true;
    let text = '';
    for await (const chunk of res.body) {
      if (first && stream) ttfb.push(performance.now() - t0);
      first = false;
      text += String(chunk);
    }
    return res.statusCode === 200 && (stream ? text.includes('[DONE]') : text.includes('"ok"'));
  };
}

function reportTtfb(label: string, samples: number[]): void {
  const sorted = [...samples].sort((a, b) => a - b);
  const ms = (v: number) => v.toFixed(2).padStart(8);
  console.log(
    `${''.padEnd(34)} first byte p50 ${ms(percentile(sorted, 0.5))} ms   p99 ${ms(percentile(sorted, 0.99))} ms  (${label})`,
  );
}

async function main(): Promise<void> {
  await withService(
    {
      workers: args.workers,
      connections: args.concurrency + 10,
      runtime: args.runtime,
      warmUpSeconds: args.warmUpSeconds,
    },
    async (service) => {
      const direct = new Pool(service.stubUrl, { connections: args.concurrency + 10, pipelining: 1 });
      const { admin, sessionId } = await setUpOrg(service);
      const governed = {
        'content-type': 'application/json',
        authorization: `Bearer ${admin}`,
        'x-session-id': sessionId,
      };
      const stub = { 'content-type': 'application/json', authorization: 'Bearer sk-bench-secret' };
      const rows = [
        ['(a) direct to the stub', direct, stub, false],
        ['(b) governed chat completion', service.api, governed, false],
        ['(c) direct, streamed', direct, stub, true],
        ['(d) governed, streamed', service.api, governed, true],
      ] as const;
      // The stack's warm-up is of the service, whichever row comes first.
      if (args.only !== 'a' && args.only !== 'c')
        await warmUp(
          service,
          args.concurrency,
          caller(service.api, '/v1/chat/completions', governed, false, []),
        );
      console.log(
        `node ${process.version}, ${args.seconds} s per row; ${args.warmUpSeconds} s of warm-up first, then 1 s per row\n`,
      );
      for (const [label, pool, headers, stream] of rows) {
        if (args.only && !label.startsWith(`(${args.only})`)) continue;
        for (const callers of [1, args.concurrency]) {
          const ttfb: number[] = [];
          const result = await measure(
            service,
            args.seconds,
            label,
            callers,
            caller(pool, '/v1/chat/completions', headers, stream, ttfb),
          );
          report(result);
          // The warm-up second's samples come first: keep the measured ones.
          if (stream) reportTtfb(label, ttfb.slice(-result.done));
        }
      }
      await direct.close();
    },
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
