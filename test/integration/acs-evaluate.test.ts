import { startTestApp, type TestApp } from '../support/test-app';
import { openSession, setUpInvoking, type InvokeSetup } from '../support/invoke-fixtures';

/**
 * POST /v1/acs/evaluate goes through the guardian queue and answers synchronously with the same
 * engine that decides every invoke; the decision and its audit entry are written.
 */
let app: TestApp;
let setup: InvokeSetup;

interface DecisionBody {
  id: string;
  verdict: string;
  reasons: { policy_id: string | null; code: string; rule_index: number | null }[];
  shadow_reasons: unknown[];
  modified_action: { messages?: { content: string }[]; max_tokens?: number } | null;
  policy_version: number;
  action_digest: string;
  session_id: string | null;
  agent_id: string | null;
}

beforeAll(async () => {
  app = await startTestApp({ workers: true });
  setup = await setUpInvoking(app.http, { models: ['mock-1'] });
});
afterAll(() => app.close());

const evaluate = (body: Record<string, unknown>) =>
  app.http.post<DecisionBody>('/v1/acs/evaluate', body, setup.org.adminKey);

async function createPolicy(body: Record<string, unknown>): Promise<string> {
  const res = await app.http.post<{ id: string }>('/v1/policies', body, setup.org.adminKey);
  expect(res.status).toBe(201);
  return res.body.id;
}

describe('POST /v1/acs/evaluate', () => {
  it('allows an action no policy speaks to, and logs the decision with its audit entry', async () => {
    const res = await evaluate({
      action: { type: 'tool.call', tool: { name: 'search', arguments: { q: 'x' } } },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ verdict: 'allow', reasons: [], shadow_reasons: [] });
    expect(res.body.action_digest).toMatch(/^[0-9a-f]{64}$/);
    const logged = await app.http.get<DecisionBody>(`/v1/acs/decisions/${res.body.id}`, setup.org.adminKey);
    expect(logged.body).toMatchObject({
      id: res.body.id,
      verdict: 'allow',
      action_digest: res.body.action_digest,
    });
    const audit = await app.http.get<{ data: { action: string }[] }>(
      `/v1/audit?resource_id=${res.body.id}`,
      setup.org.adminKey,
    );
    expect(audit.body.data.map((e) => e.action)).toEqual(['acs.evaluated']);
  });

  it('decides with the org policies: a deny names its policy and rule; a modify answers the whole modified action', async () => {
    const deny = await createPolicy({ name: 'no shell', rules: [{ type: 'deny_tools', tools: ['shell'] }] });
    const redact = await createPolicy({
      name: 'redact keys',
      rules: [
        { type: 'redact_pattern', pattern: 'sk-[a-z0-9]+', replacement: '[key]' },
        { type: 'max_tokens', limit: 64 },
      ],
    });
    const denied = await evaluate({ action: { type: 'tool.call', tool: { name: 'shell', arguments: {} } } });
    expect(denied.body.verdict).toBe('deny');
    expect(denied.body.reasons).toEqual([
      expect.objectContaining({ policy_id: deny, code: 'tool_denied', rule_index: 0 }),
    ]);

    const action = {
      type: 'llm.invoke',
      model: 'mock-1',
      messages: [{ role: 'user', content: 'my key is sk-abc123' }],
      max_tokens: 500,
      estimated_cost_usd: 0.01,
    };
    const modified = await evaluate({ agent_id: setup.agentId, action });
    expect(modified.body.verdict).toBe('modify');
    expect(modified.body.modified_action?.messages?.[0]?.content).toBe('my key is [key]');
    expect(modified.body.modified_action?.max_tokens).toBe(64);
    expect(modified.body.reasons.map((r) => r.policy_id)).toEqual([redact, redact]);
    // The log keeps the modified action without its messages, and no prompt text at all.
    const [row] = await app.infra.knex('decisions').where({ id: modified.body.id });
    expect(JSON.stringify(row)).not.toContain('sk-abc123');
    expect(JSON.stringify(row)).not.toContain('[key]');
  });

  it('takes a chat call as /v1/chat/completions sends it: tool_calls, offered tools, tool_choice, developer turns (QA)', async () => {
    // The "no shell" policy of the test before denies the tool `shell`.
    const chat = (extra: Record<string, unknown>, messages: unknown[] = [{ role: 'user', content: 'hi' }]) =>
      evaluate({
        action: { type: 'llm.invoke', model: 'mock-1', estimated_cost_usd: 0.01, messages, ...extra },
      });
    const called = await chat({}, [
      { role: 'developer', content: [{ type: 'text', text: 'be brief' }] },
      { role: 'user', content: 'list files' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'shell', arguments: '{"c":"ls"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'a.txt' },
    ]);
    expect(called.status).toBe(200);
    expect(called.body).toMatchObject({ verdict: 'deny', reasons: [{ code: 'tool_denied' }] });
    const offered = await chat({ tools: [{ type: 'function', function: { name: 'Shell' } }] });
    expect(offered.body).toMatchObject({ verdict: 'deny', reasons: [{ code: 'tool_denied' }] });
    const forced = await chat({ tool_choice: { type: 'function', function: { name: 'shell' } } });
    expect(forced.body).toMatchObject({ verdict: 'deny', reasons: [{ code: 'tool_denied' }] });
    const harmless = await chat({
      tools: [{ type: 'function', function: { name: 'search' } }],
      tool_choice: 'auto',
    });
    expect(harmless.body.verdict).toBe('allow');
    // Keys the OpenAI SDK sends back that the engine does not read are ignored, as chat ignores them.
    const sdk = await chat({}, [{ role: 'assistant', content: 'hi', refusal: null, audio: null }]);
    expect(sdk.body.verdict).toBe('allow');
    // What it takes in Chat Completions' spelling, it answers in it (QA: toolCalls came back).
    await createPolicy({ name: 'clamp', rules: [{ type: 'max_tokens', limit: 16 }] });
    const call = { id: 'call_9', type: 'function', function: { name: 'search', arguments: '{}' } };
    const clamped = await chat({ max_tokens: 100 }, [
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: 'call_9', content: 'found' },
    ]);
    expect(clamped.body.verdict).toBe('modify');
    expect(clamped.body.modified_action?.messages).toEqual([
      { role: 'assistant', content: '', tool_calls: [call] },
      { role: 'tool', content: 'found', tool_call_id: 'call_9' },
    ]);
  });

  it("applies the agent record's own checks first, and takes the agent from the session", async () => {
    const session = await openSession(app.http, setup.org.adminKey, {
      agent_id: setup.agentId,
      max_cost_usd: 1,
    });
    const res = await evaluate({ session_id: session.id, action: { type: 'llm.invoke', model: 'gpt-4o' } });
    expect(res.body).toMatchObject({ verdict: 'deny', agent_id: setup.agentId, session_id: session.id });
    expect(res.body.reasons[0]?.code).toBe('model_not_allowed');
  });

  it("refuses an agent_id other than the session's agent with 400 validation_error, as invoke does", async () => {
    const session = await openSession(app.http, setup.org.adminKey, {
      agent_id: setup.agentId,
      max_cost_usd: 1,
    });
    const second = await app.http.post<{ id: string }>(
      '/v1/agents',
      { name: 'not the session agent', allowed_models: ['mock-1'] },
      setup.org.adminKey,
    );
    expect(second.status).toBe(201);
    const action = { type: 'llm.invoke', model: 'mock-1' };
    const res = await app.http.post<{
      error_code: string;
      message: string;
      details: { path: string; message: string }[];
    }>('/v1/acs/evaluate', { agent_id: second.body.id, session_id: session.id, action }, setup.org.adminKey);
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('validation_error');
    const message = `agent_id: session ${session.id} belongs to agent ${setup.agentId}`;
    expect(res.body.details).toEqual([{ path: 'agent_id', message }]);
    // Invoke refuses the same pair with the same answer.
    const invoked = await app.http.post<typeof res.body>(
      '/v1/llm/invoke',
      {
        session_id: session.id,
        agent_id: second.body.id,
        model: 'mock-1',
        max_tokens: 16,
        messages: [{ role: 'user', content: 'hi' }],
      },
      setup.org.adminKey,
    );
    expect(invoked.status).toBe(400);
    expect({ ...invoked.body, request_id: null }).toEqual({ ...res.body, request_id: null });
    // Naming the session's own agent is fine.
    const own = await evaluate({ agent_id: setup.agentId, session_id: session.id, action });
    expect(own.status).toBe(200);
    expect(own.body).toMatchObject({ agent_id: setup.agentId, session_id: session.id });
  });

  it('answers 404 for a session or agent of no org of the caller, before anything is queued', async () => {
    expect((await evaluate({ session_id: 'ses_nope', action: { type: 'x' } })).status).toBe(404);
    expect((await evaluate({ agent_id: 'agt_nope', action: { type: 'x' } })).status).toBe(404);
  });

  it('refuses a body without an action type with 400 naming the field', async () => {
    const res = await evaluate({ action: {} });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toContain('action.type');
  });
});
