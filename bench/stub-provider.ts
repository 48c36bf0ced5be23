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

/** The same answer as server-sent events, for `stream: true` (three pieces, usage, [DONE]). */
const STREAM = [
  ...['o', 'k', '.'].map((content) => ({ choices: [{ index: 0, delta: { content } }] })),
  { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
  { choices: [], usage: { prompt_tokens: 12, completion_tokens: 2 } },
]
  .map((event) => `data: ${JSON.stringify(event)}\n\n`)
  .concat('data: [DONE]\n\n')
  .join('');

const server = createServer((req, res) => {
  let body = '';
  req.on('data', (chunk: Buffer) => (body += chunk.toString()));
  req.on('end', () => {
    if (!body.includes('"stream":true'))
      return res.writeHead(200, { 'content-type': 'application/json' }).end(ANSWER);
    res.writeHead(200, { 'content-type': 'text/event-stream' }).end(STREAM);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.send?.((server.address() as { port: number }).port));
