/**
 * A zero-latency OpenAI-compatible provider for the benchmarks, run as its own process (forked by
 * harness.ts) so that its CPU is its own. Sends its port to the parent once listening.
 */
import { createServer } from 'node:http';

const ANSWER = JSON.stringify({
  model: 'bench-model',
  choices: [{ message: { role: 'assistant', content: 'ok' } }],
  usage: { prompt_tokens: 12, completion_tokens: 2 },
});

const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(ANSWER));
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.send?.((server.address() as { port: number }).port));
