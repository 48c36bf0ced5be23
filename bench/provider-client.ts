/**
 * `npm run bench:providers -- [requests] [concurrency]`: the cost of the provider HTTP client.
 * A local Chat Completions stub (in a child process, so its CPU is not counted) answers at once;
 * the same calls go through (a) global fetch, as the official SDKs do, and (b) this service's
 * adapter on undici. Prints throughput and client CPU per call for each.
 */
import { fork } from 'node:child_process';
import { handleHelp, positiveInt } from './bench-cli';
import { ProviderRouter } from '../infra/providers/provider-router';

const USAGE = `
npm run bench:providers -- [requests=20000] [concurrency=50]

The provider HTTP client alone: the same calls to a local stub through global fetch (as the
official SDKs do) and through this service's undici adapter. Needs nothing but Node.`;
if (!process.argv.includes('--stub')) handleHelp(USAGE);
const total = process.argv.includes('--stub') ? 0 : positiveInt(USAGE, 'requests', process.argv[2], 20_000);
const concurrency = process.argv.includes('--stub')
  ? 0
  : positiveInt(USAGE, 'concurrency', process.argv[3], 50);
const answer = JSON.stringify({
  model: 'stub',
  choices: [{ message: { role: 'assistant', content: 'ok' } }],
  usage: { prompt_tokens: 10, completion_tokens: 2 },
});
const body = { model: 'stub', messages: [{ role: 'user', content: 'hello there' }], max_tokens: 16 };

function startStub(): Promise<{ url: string; stop(): void }> {
  const child = fork(__filename, ['--stub'], { execArgv: ['--import', 'tsx'] });
  return new Promise((resolve) =>
    child.on('message', (port) =>
      resolve({ url: `http://127.0.0.1:${String(port)}`, stop: () => child.kill() }),
    ),
  );
}

async function runStub(): Promise<void> {
  const { createServer } = await import('node:http');
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(answer));
  });
  server.keepAliveTimeout = 30_000;
  server.listen(0, '127.0.0.1', () => process.send?.((server.address() as { port: number }).port));
}

async function measure(label: string, call: () => Promise<unknown>): Promise<void> {
  let next = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < total) await call();
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  const cpuUsPerCall = (used.user + used.system) / total;
  console.log(
    `${label.padEnd(28)} ${Math.round(total / seconds)
      .toString()
      .padStart(6)} calls/s   client CPU ${cpuUsPerCall.toFixed(0).padStart(4)} µs/call`,
  );
}

async function main(): Promise<void> {
  const stub = await startStub();
  const router = new ProviderRouter({ allowPrivateHosts: true });
  const viaFetch = async () => {
    const res = await fetch(`${stub.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' },
      body: JSON.stringify(body),
    });
    return res.json();
  };
  const viaAdapter = () =>
    router.complete({
      provider: 'openai_compatible',
      baseUrl: `${stub.url}/v1`,
      secret: 'sk-bench',
      model: 'stub',
      messages: body.messages as never,
      maxTokens: 16,
      timeoutMs: 10_000,
    });
  console.log(`${total} calls at concurrency ${concurrency} against a local stub (node ${process.version})`);
  for (let round = 1; round <= 2; round++) {
    await measure(`fetch (round ${round})`, viaFetch);
    await measure(`undici adapter (round ${round})`, viaAdapter);
  }
  await router.close();
  stub.stop();
}

if (process.argv.includes('--stub')) void runStub();
else
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
