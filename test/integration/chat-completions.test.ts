import type { ServerResponse } from 'node:http';
import OpenAI from 'openai';
import { generateText } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { mintKey } from '../support/factories';
import {
  openSession,
  setUpInvoking,
  type InvocationBody,
  type InvokeSetup,
} from '../support/invoke-fixtures';
import { approverKeys, requireApproval, vote, type ApprovalBody } from '../support/approval-fixtures';
import { StubProvider, type RecordedRequest } from '../support/stub-provider';
import { caught, openaiClient } from '../support/openai-sdk';
import { startTestApp, type TestApp } from '../support/test-app';

/**
 * The OpenAI-compatible surface, driven by clients no one here wrote: the official `openai` SDK and
 * Vercel's AI SDK, pointed at this service by base URL, key and session header alone.
 */
let app: TestApp;
let stub: StubProvider;
let setup: InvokeSetup;
let stubSetup: InvokeSetup;
let agentKey: string;
let stubAgentKey: string;

const clientFor = (apiKey: string, sessionId: string, extra: Record<string, string> = {}) =>
  openaiClient(app.http.baseUrl, apiKey, { 'X-Session-Id': sessionId, ...extra });

const session = (s: InvokeSetup, body: Record<string, unknown> = {}) =>
  openSession(app.http, s.org.adminKey, { agent_id: s.agentId, max_cost_usd: 1, ...body });

beforeAll(async () => {
  stub = await new StubProvider().start();
  app = await startTestApp({
    workers: true,
    env: { CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true', CP_MAX_WAIT_SECONDS: '2' },
  });
  setup = await setUpInvoking(app.http, { models: ['mock-1', 'gated-1'] });
  agentKey = (await mintKey(app.http, setup.org.adminKey, ['invoke'])).key;
  stubSetup = await setUpInvoking(app.http, { baseUrl: stub.url, models: ['stub-model'] });
  stubAgentKey = (await mintKey(app.http, stubSetup.org.adminKey, ['invoke'])).key;
}, 60_000);
afterAll(async () => {
  await app.close();
  await stub.stop();
});

describe('POST /v1/chat/completions with the official openai SDK', () => {
  it('answers a chat.completion, governed and charged like an invoke, with X-Invocation-Id and X-Cost-Usd', async () => {
    const s = await session(setup);
    const client = clientFor(agentKey, s.id);
    const { data, response } = await client.chat.completions
      .create({
        model: 'mock-1',
        messages: [
          { role: 'developer', content: 'be brief' },
          {
            role: 'user',
            content: [
              { type: 'text', text: 'hello ' },
              { type: 'text', text: 'there' },
            ],
          },
        ],
        max_completion_tokens: 32,
        user: 'end-user-7',
        metadata: { ticket: 'T-1' },
      })
      .withResponse();
    expect(data.object).toBe('chat.completion');
    expect(data.choices[0]?.message).toMatchObject({
      role: 'assistant',
      content: 'mock reply to: hello there',
    });
    expect(data.choices[0]?.finish_reason).toBe('stop');
    expect(data.usage?.total_tokens).toBe(
      (data.usage?.prompt_tokens ?? 0) + (data.usage?.completion_tokens ?? 0),
    );
    const invocationId = response.headers.get('x-invocation-id') as string;
    expect(invocationId).toBe(data.id);
    const cost = Number(response.headers.get('x-cost-usd'));
    expect(cost).toBeGreaterThan(0);
    const invocation = await app.http.get<InvocationBody>(`/v1/llm/invocations/${invocationId}`, agentKey);
    expect(invocation.body).toMatchObject({ status: 'succeeded', session_id: s.id, cost_usd: cost });
    const live = await app.http.get<{ usage: { cost_usd: number; calls: number } }>(
      `/v1/sessions/${s.id}`,
      agentKey,
    );
    expect(live.body.usage).toMatchObject({ cost_usd: cost, calls: 1 });
  });

  it('raises the SDK errors with the contract statuses and codes', async () => {
    const capped = await session(setup, { max_calls: 1 });
    const client = clientFor(agentKey, capped.id);
    const ask = (model = 'mock-1') =>
      client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 8 });
    await ask();
    const budget = await caught(ask());
    expect(budget).toMatchObject({ status: 402, code: 'budget_exceeded' });

    const open = await session(setup);
    const denied = await caught(
      clientFor(agentKey, open.id).chat.completions.create({
        model: 'gpt-4o',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 8,
      }),
    );
    expect(denied).toMatchObject({ status: 403, code: 'model_not_allowed' });

    const noSession = await caught(
      new OpenAI({
        apiKey: agentKey,
        baseURL: `${app.http.baseUrl}/v1`,
        maxRetries: 0,
      }).chat.completions.create({
        model: 'mock-1',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 8,
      }),
    );
    expect(noSession).toMatchObject({ status: 400, code: 'validation_error', param: 'X-Session-Id' });

    const noLimit = await caught(
      clientFor(agentKey, open.id).chat.completions.create({
        model: 'mock-1',
        messages: [{ role: 'user', content: 'hi' }],
      }),
    );
    expect(noLimit).toMatchObject({ status: 400, code: 'validation_error', param: 'max_tokens' });
    const badKey = await caught(
      clientFor('csk_nope', open.id).chat.completions.create({
        model: 'mock-1',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 8,
      }),
    );
    expect(badKey).toMatchObject({ status: 401, code: 'invalid_api_key' });
  });

  it('streams chat.completion.chunk events, with the usage chunk when asked', async () => {
    const s = await session(setup);
    const stream = await clientFor(agentKey, s.id).chat.completions.create({
      model: 'mock-1',
      messages: [{ role: 'user', content: 'stream me a reply' }],
      max_tokens: 64,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    let finish: string | null | undefined;
    const models = new Set<string>();
    for await (const chunk of stream) {
      models.add(chunk.model);
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('mock reply to: stream me a reply');
    expect(finish).toBe('stop');
    expect(usage?.completion_tokens).toBeGreaterThan(0);
    // Every chunk names the model, the usage chunk included.
    expect([...models]).toEqual(['mock-1']);
  });

  it('holds an approval-gated request, answers approval_pending, and goes on with X-Invocation-Id after the vote', async () => {
    await requireApproval(app.http, setup.org.adminKey, { model: 'gated-1' });
    const [approver] = (await approverKeys(app.http, setup.org.adminKey, 1)) as [string];
    const s = await session(setup);
    const client = clientFor(agentKey, s.id);
    const body = {
      model: 'gated-1',
      messages: [{ role: 'user' as const, content: 'deploy' }],
      max_tokens: 8,
    };
    const pending = await caught(client.chat.completions.create(body));
    expect(pending).toMatchObject({ status: 409, code: 'approval_pending' });
    const approvalId = pending.param as string;
    const invocationId = pending.headers?.get('x-invocation-id') as string;
    const approval = await app.http.get<ApprovalBody>(`/v1/approvals/${approvalId}`, approver);
    expect(approval.body.invocation_id).toBe(invocationId);
    expect((await vote(app.http, approver, approvalId, 'approve')).status).toBe(200);
    const resumed = await client.chat.completions.create(body, {
      headers: { 'X-Invocation-Id': invocationId },
    });
    expect(resumed.id).toBe(invocationId);
    expect(resumed.choices[0]?.message.content).toBe('mock reply to: deploy');
  });
});

describe('X-Invocation-Id resumes only the request that started the invocation', () => {
  /** An org whose policy holds every call of `mock-1` for one approver, with extra rules. */
  async function gatedOrg(extraRules: unknown[] = []) {
    const org = await setUpInvoking(app.http, { models: ['mock-1'] });
    const key = (await mintKey(app.http, org.org.adminKey, ['invoke'])).key;
    await requireApproval(app.http, org.org.adminKey, { model: 'mock-1', extraRules });
    const [approver] = (await approverKeys(app.http, org.org.adminKey, 1)) as [string];
    return { client: clientFor(key, (await session(org)).id), approver };
  }
  const body = {
    model: 'mock-1',
    messages: [{ role: 'user' as const, content: 'deploy to production' }],
    max_tokens: 8,
  };

  it('refuses another prompt, model or max_tokens under the id with 400 validation_error, and resumes the same one', async () => {
    const { client, approver } = await gatedOrg();
    const pending = await caught(client.chat.completions.create(body));
    expect(pending).toMatchObject({ status: 409, code: 'approval_pending' });
    const resume = { headers: { 'X-Invocation-Id': pending.headers?.get('x-invocation-id') as string } };
    expect((await vote(app.http, approver, pending.param as string, 'approve')).status).toBe(200);
    for (const other of [
      { ...body, messages: [{ role: 'user' as const, content: 'delete production' }] },
      { ...body, model: 'gated-1' },
      { ...body, max_tokens: 9 },
      { ...body, stream: true as const, max_tokens: 9 },
    ]) {
      const refused = await caught(client.chat.completions.create(other, resume));
      expect(refused).toMatchObject({ status: 400, code: 'validation_error', param: 'X-Invocation-Id' });
      expect(refused.message).toContain('another request');
    }
    // The same request, streamed or given another temperature, is the same call.
    const resumed = await client.chat.completions.create({ ...body, temperature: 0.5 }, resume);
    expect(resumed.choices[0]?.message.content).toBe('mock reply to: deploy to production');
    let streamed = '';
    for await (const chunk of await client.chat.completions.create({ ...body, stream: true }, resume))
      streamed += chunk.choices[0]?.delta.content ?? '';
    expect(streamed).toBe('mock reply to: deploy to production');
  });

  it('resumes a request a policy redacted and clamped, sent again as the client wrote it', async () => {
    const { client, approver } = await gatedOrg([
      { type: 'redact_pattern', pattern: 'production', replacement: '[env]' },
      { type: 'max_tokens', limit: 4 },
    ]);
    const pending = await caught(client.chat.completions.create(body));
    expect(pending).toMatchObject({ status: 409, code: 'approval_pending' });
    const resume = { headers: { 'X-Invocation-Id': pending.headers?.get('x-invocation-id') as string } };
    expect((await vote(app.http, approver, pending.param as string, 'approve')).status).toBe(200);
    const resumed = await client.chat.completions.create(body, resume);
    expect(resumed.choices[0]?.message.content).toBe('mock reply to: deploy to [env]');
    const asRedacted = { ...body, messages: [{ role: 'user' as const, content: 'deploy to [env]' }] };
    const refused = await caught(client.chat.completions.create({ ...asRedacted, max_tokens: 4 }, resume));
    expect(refused).toMatchObject({ status: 400, param: 'X-Invocation-Id' });
  });
});

describe('a streamed request resumed with X-Invocation-Id', () => {
  it("names the invocation's model in every chunk", async () => {
    const gated = await setUpInvoking(app.http, { models: ['mock-stream-60', 'mock-1'] });
    const key = (await mintKey(app.http, gated.org.adminKey, ['invoke'])).key;
    await requireApproval(app.http, gated.org.adminKey, { model: 'mock-stream-60' });
    const [approver] = (await approverKeys(app.http, gated.org.adminKey, 1)) as [string];
    const client = clientFor(key, (await session(gated)).id);
    const body = {
      model: 'mock-stream-60',
      messages: [{ role: 'user' as const, content: 'stream after the vote' }],
      max_tokens: 16,
      stream: true as const,
    };
    const pending = await caught(client.chat.completions.create(body));
    expect(pending).toMatchObject({ status: 409, code: 'approval_pending' });
    expect((await vote(app.http, approver, pending.param as string, 'approve')).status).toBe(200);
    const invocationId = pending.headers?.get('x-invocation-id') as string;
    const stream = await client.chat.completions.create(body, {
      headers: { 'X-Invocation-Id': invocationId },
    });
    let text = '';
    const models = new Set<string>();
    for await (const chunk of stream) {
      models.add(chunk.model);
      text += chunk.choices[0]?.delta.content ?? '';
    }
    expect(text).toBe('mock reply to: stream after the vote');
    expect([...models]).toEqual(['mock-stream-60']);
  });
});

describe('GET /v1/models', () => {
  it("lists the session's agent's models, or every priced model without a session", async () => {
    const s = await session(setup);
    const forSession = await clientFor(agentKey, s.id).models.list();
    expect(forSession.data.map((m) => m.id)).toEqual(['gated-1', 'mock-1']);
    const all = await new OpenAI({
      apiKey: agentKey,
      baseURL: `${app.http.baseUrl}/v1`,
      maxRetries: 0,
    }).models.list();
    const ids = all.data.map((m) => m.id);
    expect(ids).toEqual(expect.arrayContaining(['mock-1', 'gated-1', 'gpt-4o-mini']));
    const reader = (await mintKey(app.http, setup.org.adminKey, ['read'])).key;
    const refused = await caught(clientFor(reader, s.id).models.list());
    expect(refused).toMatchObject({ status: 403, code: 'insufficient_scope' });
  });

  it('leaves out a model the agent allows but that has no price: every call to it is refused (QA)', async () => {
    const agent = await app.http.post<{ id: string }>(
      '/v1/agents',
      {
        name: 'allows unpriced',
        allowed_models: ['mock-1', 'never-priced-x'],
        credential_refs: [setup.credentialRef],
      },
      setup.org.adminKey,
    );
    expect(agent.status).toBe(201);
    const s = await openSession(app.http, setup.org.adminKey, { agent_id: agent.body.id, max_cost_usd: 1 });
    const listed = await clientFor(agentKey, s.id).models.list();
    expect(listed.data.map((m) => m.id)).toEqual(['mock-1']);
    const missing = await caught(clientFor(agentKey, s.id).models.retrieve('never-priced-x'));
    expect(missing).toMatchObject({ status: 404, code: 'not_found' });
  });
});

describe('GET /v1/models/{id}', () => {
  const sessionless = () =>
    new OpenAI({ apiKey: agentKey, baseURL: `${app.http.baseUrl}/v1`, maxRetries: 0 });

  it("retrieves a model the session's agent may call", async () => {
    const s = await session(setup);
    const model = await clientFor(agentKey, s.id).models.retrieve('mock-1');
    expect(model).toEqual({ id: 'mock-1', object: 'model', created: 0, owned_by: 'control-plane' });
  });

  it("answers 404 not_found, OpenAI-shaped and naming it, for a model the session's agent may not call", async () => {
    const s = await session(setup);
    const missing = await caught(clientFor(agentKey, s.id).models.retrieve('gpt-4o-mini'));
    expect(missing).toMatchObject({ status: 404, code: 'not_found', type: 'invalid_request_error' });
    expect(missing.message).toContain('gpt-4o-mini');
  });

  it('without a session, retrieves any priced model (a name with a slash too) and refuses an unpriced one', async () => {
    const priced = await app.http.call('PUT', `/v1/pricing/${encodeURIComponent('acme/model-x')}`, {
      token: setup.org.adminKey,
      body: { input_per_mtok_usd: 1, output_per_mtok_usd: 1 },
    });
    expect(priced.status).toBe(200);
    expect((await sessionless().models.retrieve('gpt-4o-mini')).id).toBe('gpt-4o-mini');
    expect((await sessionless().models.retrieve('acme/model-x')).id).toBe('acme/model-x');
    const missing = await caught(sessionless().models.retrieve('no-such-model'));
    expect(missing).toMatchObject({ status: 404, code: 'not_found' });
    expect(missing.message).toContain('no-such-model');
  });

  it('refuses a key without llm:invoke with 403 insufficient_scope', async () => {
    const reader = (await mintKey(app.http, setup.org.adminKey, ['read'])).key;
    const refused = await caught(clientFor(reader, (await session(setup)).id).models.retrieve('mock-1'));
    expect(refused).toMatchObject({ status: 403, code: 'insufficient_scope' });
  });
});

describe('tool calls pass through to the provider and back', () => {
  it('offers the tools, returns the tool call, and answers the tool result on the next turn', async () => {
    const weather = {
      type: 'function' as const,
      function: {
        name: 'get_weather',
        description: 'weather',
        parameters: { type: 'object', properties: {} },
      },
    };
    stub.handler = (req: RecordedRequest, res) => {
      const messages = (req.body as { messages: { role: string }[] }).messages;
      const answered = messages.some((m) => m.role === 'tool');
      const message = answered
        ? { role: 'assistant', content: 'It is sunny.' }
        : {
            role: 'assistant',
            content: null,
            tool_calls: [
              {
                id: 'call_1',
                type: 'function',
                function: { name: 'get_weather', arguments: '{"city":"Oslo"}' },
              },
            ],
          };
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          model: 'stub-model',
          choices: [{ message, finish_reason: answered ? 'stop' : 'tool_calls' }],
          usage: { prompt_tokens: 20, completion_tokens: 5 },
        }),
      );
    };
    const s = await session(stubSetup);
    const client = clientFor(stubAgentKey, s.id);
    const first = await client.chat.completions.create({
      model: 'stub-model',
      messages: [{ role: 'user', content: 'weather in Oslo?' }],
      max_tokens: 50,
      tools: [weather],
      tool_choice: 'auto',
    });
    expect(first.choices[0]?.finish_reason).toBe('tool_calls');
    const call = first.choices[0]?.message.tool_calls?.[0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call).toMatchObject({
      id: 'call_1',
      function: { name: 'get_weather', arguments: '{"city":"Oslo"}' },
    });
    // The invocation's own view carries the tool call too (held to its documented schema).
    const invocation = await app.http.get<InvocationBody & { output: Record<string, unknown> }>(
      `/v1/llm/invocations/${first.id}`,
      stubAgentKey,
    );
    expect(invocation.status).toBe(200);
    expect(invocation.body.output.tool_calls).toEqual([call]);
    const listed = await app.http.get<{ data: { id: string; output: Record<string, unknown> }[] }>(
      `/v1/llm/invocations?session_id=${s.id}`,
      stubAgentKey,
    );
    expect(listed.status).toBe(200);
    expect(listed.body.data.find((i) => i.id === first.id)?.output.tool_calls).toEqual([call]);
    const sent = stub.requests.at(-1)?.body as Record<string, unknown>;
    expect(sent.tools).toEqual([weather]);
    expect(sent.tool_choice).toBe('auto');

    const second = await client.chat.completions.create({
      model: 'stub-model',
      messages: [
        { role: 'user', content: 'weather in Oslo?' },
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: 'call_1', content: '{"sky":"clear"}' },
      ],
      max_tokens: 50,
      tools: [weather],
    });
    expect(second.choices[0]?.message.content).toBe('It is sunny.');
    const resent = (stub.requests.at(-1)?.body as { messages: Record<string, unknown>[] }).messages;
    expect(resent[1]).toMatchObject({ role: 'assistant', tool_calls: [call] });
    expect(resent[2]).toMatchObject({ role: 'tool', tool_call_id: 'call_1', content: '{"sky":"clear"}' });
  });
});

describe('the guardian decides every chat completion', () => {
  /** Answers plain JSON, or an event stream when the request streams. */
  const answer = (req: RecordedRequest, res: ServerResponse) => {
    const usage = { prompt_tokens: 5, completion_tokens: 1 };
    if (!(req.body as { stream?: boolean }).stream)
      return res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          model: 'stub-model',
          choices: [{ message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
          usage,
        }),
      );
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(
      `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'ok' }, finish_reason: 'stop' }] })}\n\n`,
    );
    res.end(`data: ${JSON.stringify({ choices: [], usage })}\n\ndata: [DONE]\n\n`);
  };

  it('a deny never reaches the provider; a redaction is never seen by it, streamed or not', async () => {
    stub.handler = answer;
    const policy = await app.http.post<{ id: string }>(
      '/v1/policies',
      {
        name: 'chat rules',
        rules: [
          { type: 'deny_pattern', pattern: 'rm -rf' },
          { type: 'redact_pattern', pattern: 'sk-[a-z0-9]+', replacement: '[key]' },
        ],
      },
      stubSetup.org.adminKey,
    );
    expect(policy.status).toBe(201);
    const s = await session(stubSetup);
    const client = clientFor(stubAgentKey, s.id);
    const before = stub.requests.length;
    const denied = await caught(
      client.chat.completions.create({
        model: 'stub-model',
        messages: [{ role: 'user', content: 'please rm -rf /' }],
        max_tokens: 8,
      }),
    );
    expect(denied).toMatchObject({ status: 403, code: 'pattern_denied' });
    expect(stub.requests.length).toBe(before);

    await client.chat.completions.create({
      model: 'stub-model',
      messages: [{ role: 'user', content: 'my key is sk-abc123' }],
      max_tokens: 8,
    });
    const sent = JSON.stringify(stub.requests.at(-1)?.body);
    expect(sent).toContain('my key is [key]');
    expect(sent).not.toContain('sk-abc123');

    const stream = await client.chat.completions.create({
      model: 'stub-model',
      messages: [{ role: 'user', content: 'streamed key sk-def456' }],
      max_tokens: 8,
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('ok');
    const streamed = JSON.stringify(stub.requests.at(-1)?.body);
    expect(streamed).toContain('streamed key [key]');
    expect(streamed).not.toContain('sk-def456');
    await app.http.call('DELETE', `/v1/policies/${policy.body.id}`, { token: stubSetup.org.adminKey });
  });
});

describe("Vercel's AI SDK on the OpenAI-compatible provider", () => {
  it('runs a two-turn exchange through the governed endpoint', async () => {
    const s = await session(setup);
    const provider = createOpenAICompatible({
      name: 'control-plane',
      baseURL: `${app.http.baseUrl}/v1`,
      apiKey: agentKey,
      headers: { 'X-Session-Id': s.id },
    });
    const model = provider.chatModel('mock-1');
    const first = await generateText({ model, prompt: 'first question', maxOutputTokens: 32 });
    expect(first.text).toBe('mock reply to: first question');
    const second = await generateText({
      model,
      maxOutputTokens: 32,
      messages: [
        { role: 'user', content: 'first question' },
        { role: 'assistant', content: first.text },
        { role: 'user', content: 'second question' },
      ],
    });
    expect(second.text).toBe('mock reply to: second question');
    const live = await app.http.get<{ usage: { calls: number } }>(`/v1/sessions/${s.id}`, agentKey);
    expect(live.body.usage.calls).toBe(2);
  });
});
