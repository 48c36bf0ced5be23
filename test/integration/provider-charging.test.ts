import type { ServerResponse } from 'node:http';
import { createServer } from 'node:net';
import { StubProvider, type RecordedRequest } from '../support/stub-provider';
import { startTestApp, type TestApp } from '../support/test-app';
import {
  invoke,
  openSession,
  setUpInvoking,
  type InvocationBody,
  type InvokeSetup,
  type SessionBody,
} from '../support/invoke-fixtures';

/**
 * What each failure class the provider stub can produce is charged: the calls the provider
 * received always equal the calls the session is charged, an answer is never lost to a write that
 * fails, and the provider is never called again for an invocation whose answer may have come.
 */

let app: TestApp;
let stub: StubProvider;
let setup: InvokeSetup;
let refusing: InvokeSetup;

// 'hello' bounds the input at 81 tokens; with max_tokens 10 at 1 and 2 USD per Mtok the
// reservation is 81 + 20 = 101 micro-dollars. An answer of 40 + 10 tokens costs 60.
const RESERVATION_USD = 0.000101;
const ANSWER_USD = 0.00006;
const completion = (content: string) => ({
  choices: [{ message: { role: 'assistant', content } }],
  usage: { prompt_tokens: 40, completion_tokens: 10 },
});

const json = (res: ServerResponse, status: number, body: unknown) =>
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

/** How the stub answers each model: one model per failure class. */
const HANDLERS: Record<string, (res: ServerResponse) => void> = {
  answers: (res) => json(res, 200, completion('fine')),
  'answers-unstorable': (res) => json(res, 200, completion('a\u0000b\ud800c\udc00d')),
  'answers-unsaveable': (res) => json(res, 200, completion('fine')),
  'answers-never-saved': (res) => json(res, 200, completion('fine')),
  'rejects-400': (res) => json(res, 400, { error: { message: 'bad request' } }),
  'refuses-key-401': (res) => json(res, 401, { error: { message: 'Incorrect API key' } }),
  'limits-429': (res) => json(res, 429, { error: { message: 'slow down' } }),
  'fails-500': (res) => json(res, 500, { error: { message: 'upstream exploded' } }),
  'answers-garbage': (res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"choi'),
  'times-out': (res) => void setTimeout(() => json(res, 200, completion('late')), 1500),
  'resets-connection': (res) => res.socket?.destroy(),
};
const MODELS = Object.keys(HANDLERS);

function answer(req: RecordedRequest, res: ServerResponse): void {
  const handler = HANDLERS[(req.body as { model: string }).model];
  if (handler) handler(res);
  else json(res, 404, { error: { message: 'no such model' } });
}

/** A port nothing listens on: connecting to it is refused. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

beforeAll(async () => {
  stub = await new StubProvider().start();
  stub.handler = answer;
  app = await startTestApp({
    workers: true,
    env: {
      CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true',
      // Below 'times-out' (1.5 s), and far above an answer's round trip on a busy CI machine.
      CP_PROVIDER_TIMEOUT_MS: '1000',
      CP_INVOKE_ATTEMPTS: '3',
      CP_INVOKE_BACKOFF_MS: '20',
    },
  });
  const price = { input: 1, output: 2 };
  setup = await setUpInvoking(app.http, { baseUrl: stub.url, models: MODELS, price });
  const nowhere = `http://127.0.0.1:${await closedPort()}`;
  refusing = await setUpInvoking(app.http, { baseUrl: nowhere, models: ['refused'], price });
  // Stands in for any failure to save an answer: PostgreSQL refuses to record one of these models
  // as succeeded, and the second refuses the fallback record too (until the attempt is charged).
  await app.infra.knex.raw(`
    create function refuse_answers() returns trigger language plpgsql as $$
    begin
      if new.model = 'answers-unsaveable' and new.status = 'succeeded'
        or new.model = 'answers-never-saved' and new.status <> 'running'
          and coalesce(new.error->>'error_code', '') <> 'provider_outcome_unknown' then
        raise exception 'refused by the test';
      end if;
      return new;
    end $$;
    create trigger refuse_answers before update on invocations for each row execute function refuse_answers();
  `);
});
afterAll(async () => {
  await app.close();
  await stub.stop();
});

const callsTo = (model: string) =>
  stub.requests.filter((r) => (r.body as { model?: string } | undefined)?.model === model).length;

async function run(
  model: string,
  who: InvokeSetup = setup,
  limits: Record<string, unknown> = {},
): Promise<{ invocation: InvocationBody; usage: SessionBody['usage'] }> {
  const session = await openSession(app.http, who.org.adminKey, {
    agent_id: who.agentId,
    max_cost_usd: 1,
    ...limits,
  });
  const body = {
    session_id: session.id,
    model,
    messages: [{ role: 'user', content: 'hello' }],
    max_tokens: 10,
  };
  const res = await invoke(app.http, who.org.adminKey, body, 20);
  expect(res.status).toBe(200);
  const after = await app.http.get<SessionBody>(`/v1/sessions/${session.id}`, who.org.adminKey);
  return { invocation: res.body, usage: after.body.usage };
}

describe('what each failure class is charged (CP_INVOKE_ATTEMPTS=3)', () => {
  const cases: [string, string, string | null, number, number][] = [
    // model, final status, error code, provider calls, cost charged (USD)
    ['answers', 'succeeded', null, 1, ANSWER_USD],
    ['rejects-400', 'failed', 'provider_rejected', 1, 0],
    ['refuses-key-401', 'failed', 'provider_auth_failed', 1, 0],
    ['limits-429', 'failed', 'provider_rate_limited', 3, 0],
    ['fails-500', 'failed', 'provider_unavailable', 3, 0],
    // A 2xx answer we cannot read was billed, at a usage we do not know: the reservation.
    ['answers-garbage', 'failed', 'provider_bad_response', 1, RESERVATION_USD],
    // Sent, then no answer: the provider may bill each one, and each retry is a new charge.
    ['times-out', 'failed', 'provider_timeout', 3, 3 * RESERVATION_USD],
    ['resets-connection', 'failed', 'provider_connection_lost', 3, 3 * RESERVATION_USD],
  ];

  it.each(cases)('%s: ends %s (%s); the calls charged equal the %d calls received', async (...c) => {
    const [model, status, code, calls, cost] = c;
    const before = callsTo(model);
    const { invocation, usage } = await run(model);
    expect(invocation.status).toBe(status);
    expect(invocation.error?.error_code ?? null).toBe(code);
    expect(callsTo(model) - before).toBe(calls);
    expect(usage.calls).toBe(calls);
    expect(usage.cost_usd).toBeCloseTo(cost, 9);
    expect(invocation.cost_usd).toBeCloseTo(cost, 9);
    expect(usage.reserved_usd).toBe(0);
  });

  it('audits each failed attempt that a retry follows, with its error code and the totals so far', async () => {
    const { invocation } = await run('fails-500');
    const audit = await app.http.get<{ data: { action: string; details: Record<string, unknown> }[] }>(
      `/v1/audit?resource_id=${invocation.id}`,
      setup.org.adminKey,
    );
    const attempts = audit.body.data.filter((e) => e.action === 'llm.invoke.attempt_failed');
    expect(attempts.map((e) => e.details)).toEqual([
      expect.objectContaining({ error_code: 'provider_unavailable', calls: 2, provider_attempts: 2 }),
      expect.objectContaining({ error_code: 'provider_unavailable', calls: 1, provider_attempts: 1 }),
    ]);
    const failed = audit.body.data.find((e) => e.action === 'llm.invoke.failed');
    expect(failed?.details).toMatchObject({ calls: 3, provider_attempts: 3, cost_usd: 0 });
  });

  it('a refused connection reached no provider: retried, and no call is charged', async () => {
    const { invocation, usage } = await run('refused', refusing);
    expect(invocation).toMatchObject({ status: 'failed', error: { error_code: 'provider_unreachable' } });
    expect(usage).toMatchObject({ calls: 0, cost_usd: 0, reserved_usd: 0 });
  });

  it('a retry that no longer fits the call cap is refused: one call made, one charged', async () => {
    const before = callsTo('fails-500');
    const { invocation, usage } = await run('fails-500', setup, { max_calls: 1 });
    expect(invocation).toMatchObject({ status: 'failed', error: { error_code: 'budget_exceeded' } });
    // The worker's refusal says which cap, what the retry needed and what remained.
    expect(invocation.error?.message).toBe(
      "the session's calls cap would be crossed: this call needs up to 1 call (its worst case) and " +
        '0 calls of 1 call remains (calls in flight count at their worst case until they settle); open a new session to continue',
    );
    expect(callsTo('fails-500') - before).toBe(1);
    expect(usage).toMatchObject({ calls: 1, cost_usd: 0, reserved_usd: 0 });
  });
});

describe('an answer that cannot be saved as it came', () => {
  it('stores an answer holding NUL and lone surrogates as U+FFFD, charged once, in a session of max_calls 1', async () => {
    const before = callsTo('answers-unstorable');
    const { invocation, usage } = await run('answers-unstorable', setup, { max_calls: 1 });
    expect(invocation.status).toBe('succeeded');
    expect(invocation.output?.content).toBe('a\ufffdb\ufffdc\ufffdd');
    expect(callsTo('answers-unstorable') - before).toBe(1);
    expect(usage).toMatchObject({ calls: 1, cost_usd: ANSWER_USD, input_tokens: 40, output_tokens: 10 });
  });

  it('charges the known usage when the answer cannot be recorded, and does not call again', async () => {
    const before = callsTo('answers-unsaveable');
    const { invocation, usage } = await run('answers-unsaveable');
    expect(invocation).toMatchObject({
      status: 'failed',
      error: { error_code: 'output_not_stored' },
      output: null,
      usage: { input_tokens: 40, output_tokens: 10 },
    });
    expect(callsTo('answers-unsaveable') - before).toBe(1);
    expect(usage).toMatchObject({ calls: 1, cost_usd: ANSWER_USD, reserved_usd: 0 });
  });

  it('charges the reservation when nothing about the answer can be recorded, and never calls again', async () => {
    const before = callsTo('answers-never-saved');
    const { invocation, usage } = await run('answers-never-saved');
    // The job failed, was retried, found its attempt's reservation held: outcome unknown.
    expect(invocation).toMatchObject({ status: 'failed', error: { error_code: 'provider_outcome_unknown' } });
    expect(callsTo('answers-never-saved') - before).toBe(1);
    expect(usage).toMatchObject({ calls: 1, cost_usd: RESERVATION_USD, reserved_usd: 0 });
  });
});
