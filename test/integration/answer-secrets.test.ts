import { mintKey } from '../support/factories';
import {
  finished,
  invoke,
  invokeBody,
  openSession,
  setUpInvoking,
  type InvokeSetup,
} from '../support/invoke-fixtures';
import { openaiClient } from '../support/openai-sdk';
import { StubProvider } from '../support/stub-provider';
import { startTestApp, type TestApp } from '../support/test-app';

/**
 * A provider that echoes the request's headers in its answer (a debugging proxy, a compromised
 * host): the credential's secret is "never returned", so it reaches neither the caller, nor the
 * stored invocation, nor a key that may only read.
 */
const SECRET = 'sk-stub-secret-0001'; // the one setUpInvoking stores
let app: TestApp;
let stub: StubProvider;
let setup: InvokeSetup;

beforeAll(async () => {
  stub = await new StubProvider().start();
  stub.handler = (req, res) => {
    const echoed = `you sent ${JSON.stringify(req.headers)}`;
    if ((req.body as { stream?: boolean }).stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const event = (body: unknown) => res.write(`data: ${JSON.stringify(body)}\n\n`);
      // Cut inside the secret: each piece alone holds only part of it.
      const cut = echoed.indexOf(SECRET) + 7;
      event({ choices: [{ index: 0, delta: { content: echoed.slice(0, cut) } }] });
      event({ choices: [{ index: 0, delta: { content: echoed.slice(cut) } }] });
      event({
        choices: [{ index: 0, delta: {}, finish_reason: 'stop' }],
        usage: { prompt_tokens: 5, completion_tokens: 9 },
      });
      return void res.end('data: [DONE]\n\n');
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        id: 'chatcmpl-1',
        object: 'chat.completion',
        created: 1,
        model: 'echo-model',
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: echoed,
              tool_calls: [
                {
                  id: `call_${SECRET}`,
                  type: 'function',
                  function: { name: 'save', arguments: `{"key":"${SECRET}"}` },
                },
              ],
            },
            finish_reason: 'tool_calls',
          },
        ],
        usage: { prompt_tokens: 5, completion_tokens: 9 },
      }),
    );
  };
  app = await startTestApp({ workers: true, env: { CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true' } });
  setup = await setUpInvoking(app.http, { baseUrl: stub.url, models: ['echo-model'] });
}, 60_000);
afterAll(async () => {
  await app.close();
  await stub.stop();
});

it('an answer that echoes the secret is stored and returned without it, to the caller and to a read key', async () => {
  const key = setup.org.adminKey;
  const session = await openSession(app.http, key, { agent_id: setup.agentId, max_cost_usd: 1 });
  const res = await invoke(app.http, key, invokeBody(session.id, { model: 'echo-model' }));
  expect(res.body.status).toBe('succeeded');
  expect(stub.requests.at(-1)?.headers.authorization).toBe(`Bearer ${SECRET}`); // it was sent
  expect(JSON.stringify(res.body)).not.toContain(SECRET);
  expect(res.body.output?.content).toContain('"authorization":"Bearer [redacted]"');

  const reader = await mintKey(app.http, key, ['read']);
  const read = await finished(app.http, reader.key, res.body.id);
  expect(JSON.stringify(read)).not.toContain(SECRET);
  const stored = await app.infra.knex('invocations').where({ id: res.body.id }).first();
  expect(JSON.stringify(stored)).not.toContain(SECRET);
});

it('a streamed answer that echoes the secret split across two pieces is streamed and stored without it', async () => {
  const key = setup.org.adminKey;
  const session = await openSession(app.http, key, { agent_id: setup.agentId, max_cost_usd: 1 });
  const client = openaiClient(app.http.baseUrl, key, { 'X-Session-Id': session.id });
  const stream = await client.chat.completions
    .create({
      model: 'echo-model',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 64,
      stream: true,
    })
    .withResponse();
  let text = '';
  for await (const chunk of stream.data) text += chunk.choices[0]?.delta.content ?? '';
  expect(text).toContain('"authorization":"Bearer [redacted]"');
  expect(text).not.toContain(SECRET);
  const id = stream.response.headers.get('x-invocation-id') ?? '';
  const stored = await app.infra.knex('invocations').where({ id }).first();
  expect(JSON.stringify(stored)).not.toContain(SECRET);
});
