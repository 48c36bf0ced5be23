import { StubProvider, type RecordedRequest } from '../support/stub-provider';
import { startTestApp, type TestApp } from '../support/test-app';
import { TEST_REDIS_URL } from '../support/test-db';
import { invoke, openSession, setUpInvoking, type InvokeSetup } from '../support/invoke-fixtures';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

/**
 * The org's policies decide every governed invoke, end to end: what the provider receives is what
 * the policies let through, and a change is enforced by a worker in another process at once.
 */
let app: TestApp;
let stub: StubProvider;
let setup: InvokeSetup;
let worker: WorkerProcess;

const completion = {
  choices: [{ message: { role: 'assistant', content: 'ok' } }],
  usage: { prompt_tokens: 10, completion_tokens: 5 },
};

beforeAll(async () => {
  stub = await new StubProvider().start();
  stub.answer(200, completion);
  // The API only: the guardian and invoke stages run in a worker process of their own.
  app = await startTestApp({ env: { CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true' } });
  setup = await setUpInvoking(app.http, {
    baseUrl: stub.url,
    models: ['stub-model'],
    price: { input: 1, output: 2 },
  });
  worker = await startWorkerProcess({
    DATABASE_URL: app.db.url,
    REDIS_URL: TEST_REDIS_URL,
    CP_REDIS_PREFIX: app.prefix,
    CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true',
  });
}, 60_000);
afterAll(async () => {
  await worker?.stop();
  await app.close();
  await stub.stop();
});

async function createPolicy(body: Record<string, unknown>): Promise<string> {
  const res = await app.http.post<{ id: string }>('/v1/policies', body, setup.org.adminKey);
  expect(res.status).toBe(201);
  return res.body.id;
}

const removePolicy = async (id: string) =>
  expect((await app.http.call('DELETE', `/v1/policies/${id}`, { token: setup.org.adminKey })).status).toBe(
    204,
  );

const REDACT_CARDS = {
  name: 'redact cards',
  rules: [{ type: 'redact_pattern', pattern: '\\d{4}-\\d{4}-\\d{4}-\\d{4}', replacement: '[card]' }],
};

/** Runs `work` with the policy in force, and removes the policy afterwards whatever happens. */
async function withPolicy(body: Record<string, unknown>, work: (id: string) => Promise<void>) {
  const id = await createPolicy(body);
  try {
    await work(id);
  } finally {
    await removePolicy(id);
  }
}

async function run(content: string, maxTokens = 400) {
  const session = await openSession(app.http, setup.org.adminKey, {
    agent_id: setup.agentId,
    max_cost_usd: 1,
  });
  const before = stub.requests.length;
  const res = await invoke(
    app.http,
    setup.org.adminKey,
    {
      session_id: session.id,
      model: 'stub-model',
      messages: [{ role: 'user', content }],
      max_tokens: maxTokens,
    },
    20,
  );
  expect(res.status).toBe(200);
  return {
    invocation: res.body,
    sent: stub.requests.slice(before) as RecordedRequest[],
    sessionId: session.id,
  };
}

describe("the org's policies decide every invoke", () => {
  it('a deny stops the invoke before the provider, with the policy reason', async () => {
    await withPolicy(
      {
        name: 'no secrets',
        rules: [{ type: 'deny_pattern', pattern: 'password' }],
      },
      async (id) => {
        const { invocation, sent } = await run('my password is hunter2');
        expect(invocation).toMatchObject({ status: 'denied', error: { error_code: 'guardian_denied' } });
        expect(invocation.decision?.reasons).toEqual([
          expect.objectContaining({ policy_id: id, code: 'pattern_denied' }),
        ]);
        expect(sent).toHaveLength(0);
      },
    );
  });

  it('a redaction means the provider never receives the redacted text', async () => {
    await withPolicy(REDACT_CARDS, async () => {
      const { invocation, sent } = await run('charge 4111-1111-1111-1111 please');
      expect(invocation.status).toBe('succeeded');
      expect(sent).toHaveLength(1);
      expect(JSON.stringify(sent[0]?.body)).not.toContain('4111');
      expect((sent[0]?.body as { messages: { content: string }[] }).messages[0]?.content).toBe(
        'charge [card] please',
      );
    });
  });

  it('a redaction that makes the prompt cost more than max_cost_per_call_usd allows denies the invoke', async () => {
    const grow = {
      name: 'grow',
      rules: [{ type: 'redact_pattern', pattern: 'x', replacement: 'Z'.repeat(1000) }],
    };
    // The request as sent reserves under $0.001 at this price; redacted, over $0.01.
    const cap = { name: 'cap', rules: [{ type: 'max_cost_per_call_usd', limit: 0.002 }] };
    await withPolicy(grow, () =>
      withPolicy(cap, async (capId) => {
        const { invocation, sent, sessionId } = await run('xxxxxxxxxx');
        expect(invocation).toMatchObject({ status: 'denied', error: { error_code: 'guardian_denied' } });
        expect(invocation.decision?.reasons).toEqual([
          expect.objectContaining({ policy_id: capId, code: 'cost_per_call_exceeded' }),
        ]);
        expect(sent).toHaveLength(0);
        const session = await app.http.get<{ usage: { cost_usd: number; calls: number } }>(
          `/v1/sessions/${sessionId}`,
          setup.org.adminKey,
        );
        expect(session.body.usage).toMatchObject({ cost_usd: 0, calls: 0 });
        // The same redaction on a prompt that stays under the limit still runs.
        expect((await run('x')).invocation.status).toBe('succeeded');
      }),
    );
  });

  it('max_cost_per_call_usd judges the request as a max_tokens clamp leaves it, as the invoke reserves it (QA)', async () => {
    // 'hello' with max_tokens 1000 reserves $0.002081 at this price; clamped to 10, $0.000101.
    const clamp = { name: 'clamp', rules: [{ type: 'max_tokens', limit: 10 }] };
    const cap = { name: 'cap', rules: [{ type: 'max_cost_per_call_usd', limit: 0.0005 }] };
    await withPolicy(clamp, (clampId) =>
      withPolicy(cap, async () => {
        const { invocation, sent } = await run('hello', 1000);
        expect(invocation).toMatchObject({ status: 'succeeded', decision: { verdict: 'modify' } });
        expect(invocation.decision?.reasons).toEqual([
          expect.objectContaining({ policy_id: clampId, code: 'max_tokens_clamped' }),
        ]);
        expect(sent.map((r) => (r.body as { max_tokens: number }).max_tokens)).toEqual([10]);
      }),
    );
  });

  it("a refusal by the agent record names the org's policy_version in its decision", async () => {
    await withPolicy({ name: 'clamp', rules: [{ type: 'max_tokens', limit: 1000 }] }, async () => {
      const allowed = (await run('hello')).invocation;
      const price = { input_per_mtok_usd: 1, output_per_mtok_usd: 2 };
      const priced = await app.http.call('PUT', '/v1/pricing/not-allowed-model', {
        token: setup.org.adminKey,
        body: price,
      });
      expect(priced.status).toBe(200);
      const session = await openSession(app.http, setup.org.adminKey, {
        agent_id: setup.agentId,
        max_cost_usd: 1,
      });
      const res = await invoke(
        app.http,
        setup.org.adminKey,
        {
          session_id: session.id,
          model: 'not-allowed-model',
          messages: [{ role: 'user', content: 'hi' }],
          max_tokens: 5,
        },
        20,
      );
      expect(res.body).toMatchObject({
        status: 'denied',
        decision: { reasons: [{ code: 'model_not_allowed' }] },
      });
      const version = async (decisionId: string | undefined) =>
        (
          await app.http.get<{ policy_version: number }>(
            `/v1/acs/decisions/${decisionId}`,
            setup.org.adminKey,
          )
        ).body.policy_version;
      const expected = await version(allowed.decision?.id);
      expect(expected).toBeGreaterThan(0);
      expect(await version(res.body.decision?.id)).toBe(expected);
    });
  });

  it('patterns judge the arguments of the tool call an invoke is about, and a redaction rewrites them', async () => {
    const session = await openSession(app.http, setup.org.adminKey, {
      agent_id: setup.agentId,
      max_cost_usd: 1,
    });
    const withTool = (cmd: string) => ({
      session_id: session.id,
      model: 'stub-model',
      messages: [{ role: 'user', content: 'clean up' }],
      max_tokens: 50,
      tool: { name: 'shell', arguments: { cmd, retries: 2 } },
    });
    await withPolicy({ name: 'no rm', rules: [{ type: 'deny_pattern', pattern: 'rm -rf' }] }, async (id) => {
      const res = await invoke(app.http, setup.org.adminKey, withTool('rm -rf /'), 20);
      expect(res.body).toMatchObject({ status: 'denied', error: { error_code: 'guardian_denied' } });
      expect(res.body.decision?.reasons).toEqual([
        expect.objectContaining({ policy_id: id, code: 'pattern_denied' }),
      ]);
    });
    await withPolicy(REDACT_CARDS, async () => {
      const res = await invoke(app.http, setup.org.adminKey, withTool('pay 4111-1111-1111-1111'), 20);
      expect(res.body.status).toBe('succeeded');
      const [row] = await app.infra.knex('invocations').where({ id: res.body.id }).select('request');
      expect(row.request.tool).toEqual({ name: 'shell', arguments: { cmd: 'pay [card]', retries: 2 } });
    });
  });

  it('a clamp makes the provider receive the clamped max_tokens, and the reservation use it', async () => {
    await withPolicy({ name: 'short answers', rules: [{ type: 'max_tokens', limit: 50 }] }, async () => {
      const { invocation, sent } = await run('hello', 400);
      expect(invocation.status).toBe('succeeded');
      expect((sent[0]?.body as { max_tokens: number }).max_tokens).toBe(50);
      const [row] = await app.infra.knex('invocations').where({ id: invocation.id }).select('reserve_tokens');
      // 'hello' bounds the input at 81 tokens: 81 + 50, not 81 + 400.
      expect(Number(row.reserve_tokens)).toBe(131);
    });
  });

  it('a policy change is enforced by the other process at once, and its removal too', async () => {
    expect((await run('hello')).invocation.status).toBe('succeeded');
    const id = await createPolicy({
      name: 'no stub',
      rules: [{ type: 'deny_models', models: ['stub-model'] }],
    });
    expect((await run('hello')).invocation.status).toBe('denied');
    await removePolicy(id);
    expect((await run('hello')).invocation.status).toBe('succeeded');
  });

  describe('through /v1/chat/completions, tools count', () => {
    const shellTool = { type: 'function', function: { name: 'shell', parameters: { type: 'object' } } };
    const searchTool = { type: 'function', function: { name: 'search' } };

    async function chat(body: Record<string, unknown>) {
      const session = await openSession(app.http, setup.org.adminKey, {
        agent_id: setup.agentId,
        max_cost_usd: 1,
      });
      const before = stub.requests.length;
      const res = await app.http.call<{ error?: { code: string } }>('POST', '/v1/chat/completions', {
        token: setup.org.adminKey,
        headers: { 'X-Session-Id': session.id },
        body: { model: 'stub-model', max_tokens: 50, ...body },
      });
      return { res, sent: stub.requests.slice(before) as RecordedRequest[] };
    }

    it('deny_tools refuses a call that offers the model a denied tool, streamed or not, before the provider', async () => {
      await withPolicy({ name: 'no shell', rules: [{ type: 'deny_tools', tools: ['shell'] }] }, async () => {
        const messages = [{ role: 'user', content: 'tidy up' }];
        const denied = await chat({ messages, tools: [searchTool, shellTool] });
        expect(denied.res.status).toBe(403);
        expect(denied.res.body.error?.code).toBe('tool_denied');
        expect(denied.sent).toHaveLength(0);
        const streamed = await chat({ messages, tools: [shellTool], stream: true });
        expect(streamed.res.status).toBe(403);
        expect(streamed.res.body.error?.code).toBe('tool_denied');
        expect(streamed.sent).toHaveLength(0);
        const allowed = await chat({ messages, tools: [searchTool] });
        expect(allowed.res.status).toBe(200);
        expect(allowed.sent).toHaveLength(1);
      });
    });

    it('a redaction reaches the arguments of tool calls in the conversation', async () => {
      await withPolicy(REDACT_CARDS, async () => {
        const call = {
          id: 'call_1',
          type: 'function',
          function: { name: 'pay', arguments: '{"card":"4111-1111-1111-1111"}' },
        };
        const { res, sent } = await chat({
          messages: [
            { role: 'user', content: 'pay it' },
            { role: 'assistant', content: null, tool_calls: [call] },
            { role: 'tool', tool_call_id: 'call_1', content: 'paid' },
          ],
        });
        expect(res.status).toBe(200);
        expect(sent).toHaveLength(1);
        expect(JSON.stringify(sent[0]?.body)).not.toContain('4111');
        expect(JSON.stringify(sent[0]?.body)).toContain('{\\"card\\":\\"[card]\\"}');
      });
    });
    it('patterns read the offered tools’ definitions: a deny refuses, a redaction rewrites what the provider gets', async () => {
      const lookup = {
        type: 'function',
        function: {
          name: 'lookup',
          description: 'the card on file is 4111-1111-1111-1111',
          parameters: { type: 'object', properties: { q: { type: 'string', description: 'say hunter2' } } },
        },
      };
      const messages = [{ role: 'user', content: 'look it up' }];
      await withPolicy(
        { name: 'no secrets', rules: [{ type: 'deny_pattern', pattern: 'hunter2' }] },
        async () => {
          const denied = await chat({ messages, tools: [lookup] });
          expect(denied.res.status).toBe(403);
          expect(denied.res.body.error?.code).toBe('pattern_denied');
          expect(denied.sent).toHaveLength(0);
        },
      );
      await withPolicy(REDACT_CARDS, async () => {
        const { res, sent } = await chat({ messages, tools: [lookup] });
        expect(res.status).toBe(200);
        expect(sent).toHaveLength(1);
        const tools = (sent[0]?.body as { tools: (typeof lookup)[] }).tools;
        expect(tools[0]?.function.description).toBe('the card on file is [card]');
        expect(tools[0]?.function.parameters).toEqual(lookup.function.parameters);
        expect(JSON.stringify(sent[0]?.body)).not.toContain('4111');
      });
      // The tool the call forces is renamed with the tool it names: the provider gets a consistent request.
      const secretTool = { type: 'function', function: { name: 'secret_lookup' } };
      const forced = { type: 'function', function: { name: 'secret_lookup' } };
      const redactName = {
        name: 'names',
        rules: [{ type: 'redact_pattern', pattern: 'secret', replacement: 'r' }],
      };
      await withPolicy(redactName, async () => {
        const { res, sent } = await chat({ messages, tools: [secretTool], tool_choice: forced });
        expect(res.status).toBe(200);
        const received = sent[0]?.body as { tools: (typeof secretTool)[]; tool_choice: typeof forced };
        expect(received.tools[0]?.function.name).toBe('r_lookup');
        expect(received.tool_choice).toEqual({ type: 'function', function: { name: 'r_lookup' } });
      });
    });
  });

  it('a shadow policy changes nothing, and its decision records what it would have done', async () => {
    await withPolicy(
      {
        name: 'trial',
        mode: 'shadow',
        rules: [{ type: 'deny_models', models: ['stub-model'] }],
      },
      async (id) => {
        const { invocation, sent } = await run('hello');
        expect(invocation.status).toBe('succeeded');
        expect(sent).toHaveLength(1);
        const decision = await app.http.get<{ shadow_reasons: unknown[] }>(
          `/v1/acs/decisions/${invocation.decision?.id}`,
          setup.org.adminKey,
        );
        expect(decision.body.shadow_reasons).toEqual([
          expect.objectContaining({ policy_id: id, code: 'model_denied', verdict: 'deny' }),
        ]);
      },
    );
  });
});
