import { mintKey, signupOrg } from '../support/factories';
import { invoke, invokeBody, openSession, setUpInvoking, type InvokeSetup } from '../support/invoke-fixtures';
import { startTestApp, type TestApp } from '../support/test-app';

/**
 * POST /v1/policies/preview replays the org's recorded invocations through its policies with and
 * without a draft. The history here is small enough to count by hand: 3 calls on mock-1 (one of
 * them with the tool `search`), then 2 on mock-2, all allowed when they ran.
 */
interface Preview {
  actions_replayed: number;
  truncated: boolean;
  changed: { total: number; by_verdict: Record<string, number> };
  examples: { invocation_id: string; before: string; after: string }[];
}
interface ErrorBody {
  error_code: string;
  details: { path: string; message: string }[];
}

let app: TestApp;
let setup: InvokeSetup;
let start: string;
let middle: string;
const onMock1: string[] = [];
const onMock2: string[] = [];
let withTool: string;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function call(sessionId: string, model: string, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await invoke(app.http, setup.org.adminKey, invokeBody(sessionId, { model, ...extra }));
  expect(res.status).toBe(200);
  expect(res.body.status).toBe('succeeded');
  return res.body.id;
}

beforeAll(async () => {
  app = await startTestApp({ workers: true });
  setup = await setUpInvoking(app.http, { models: ['mock-1', 'mock-2'] });
  const session = await openSession(app.http, setup.org.adminKey, {
    agent_id: setup.agentId,
    max_cost_usd: 1,
  });
  start = new Date(Date.now() - 1000).toISOString();
  onMock1.push(await call(session.id, 'mock-1'));
  withTool = await call(session.id, 'mock-1', { tool: { name: 'search', arguments: { q: 'x' } } });
  onMock1.push(withTool);
  onMock1.push(await call(session.id, 'mock-1'));
  await sleep(20);
  middle = new Date().toISOString();
  await sleep(20);
  onMock2.push(await call(session.id, 'mock-2'));
  onMock2.push(await call(session.id, 'mock-2'));
}, 60_000);
afterAll(() => app.close());

const draft = (rules: unknown[], extra: Record<string, unknown> = {}) => ({ name: 'draft', rules, ...extra });

const preview = (body: Record<string, unknown>, token = setup.org.adminKey) =>
  app.http.post<Preview>('/v1/policies/preview', body, token);

async function previewOk(body: Record<string, unknown>): Promise<Preview> {
  const res = await preview(body);
  expect(res.status).toBe(200);
  return res.body;
}

describe('POST /v1/policies/preview', () => {
  it('counts the verdicts a deny_models draft would change, naming each changed invocation', async () => {
    const body = await previewOk({
      policy: draft([{ type: 'deny_models', models: ['mock-1'] }]),
      since: start,
    });
    expect(body.actions_replayed).toBe(5);
    expect(body.truncated).toBe(false);
    expect(body.changed).toEqual({ total: 3, by_verdict: { 'allow->deny': 3 } });
    expect(body.examples.map((e) => e.invocation_id)).toEqual(onMock1);
    expect(body.examples.every((e) => e.before === 'allow' && e.after === 'deny')).toBe(true);
  });

  it('a draft that matches nothing changes nothing', async () => {
    const body = await previewOk({
      policy: draft([{ type: 'deny_models', models: ['gpt-4'] }]),
      since: start,
    });
    expect(body).toMatchObject({ actions_replayed: 5, changed: { total: 0, by_verdict: {} }, examples: [] });
  });

  it('replays the recorded tool and max_tokens: deny_tools and a clamp count the calls they touch', async () => {
    const tools = await previewOk({
      policy: draft([{ type: 'deny_tools', tools: ['search'] }]),
      since: start,
    });
    expect(tools.changed).toEqual({ total: 1, by_verdict: { 'allow->deny': 1 } });
    expect(tools.examples).toEqual([{ invocation_id: withTool, before: 'allow', after: 'deny' }]);
    // Every call asked for 16 tokens; a limit of 16 clamps none of them, 8 clamps all.
    const none = await previewOk({ policy: draft([{ type: 'max_tokens', limit: 16 }]), since: start });
    expect(none.changed.total).toBe(0);
    const all = await previewOk({ policy: draft([{ type: 'max_tokens', limit: 8 }]), since: start });
    expect(all.changed).toEqual({ total: 5, by_verdict: { 'allow->modify': 5 } });
  });

  it('replays only the window: since is inclusive, until exclusive', async () => {
    const deny1 = draft([{ type: 'deny_models', models: ['mock-1'] }]);
    const late = await previewOk({ policy: deny1, since: middle });
    expect(late).toMatchObject({ actions_replayed: 2, changed: { total: 0 } });
    const early = await previewOk({ policy: deny1, since: start, until: middle });
    expect(early).toMatchObject({ actions_replayed: 3, changed: { total: 3 } });
    const future = new Date(Date.now() + 60_000).toISOString();
    const empty = await previewOk({
      policy: deny1,
      since: future,
      until: new Date(Date.now() + 120_000).toISOString(),
    });
    expect(empty).toMatchObject({ actions_replayed: 0, changed: { total: 0 }, examples: [] });
  });

  it('applies the draft with the invocation context: applies_to another agent changes nothing', async () => {
    const other = draft([{ type: 'deny_models', models: ['mock-1'] }], {
      applies_to: { agent_ids: ['agt_other'] },
    });
    expect((await previewOk({ policy: other, since: start })).changed.total).toBe(0);
    const mine = draft([{ type: 'deny_models', models: ['mock-1'] }], {
      applies_to: { agent_ids: [setup.agentId] },
    });
    expect((await previewOk({ policy: mine, since: start })).changed.total).toBe(3);
  });

  it('a shadow or disabled draft never changes a verdict', async () => {
    const rules = [{ type: 'deny_models', models: ['mock-1'] }];
    expect((await previewOk({ policy: draft(rules, { mode: 'shadow' }), since: start })).changed.total).toBe(
      0,
    );
    expect((await previewOk({ policy: draft(rules, { enabled: false }), since: start })).changed.total).toBe(
      0,
    );
  });

  it("never replays another org's invocations", async () => {
    const other = await signupOrg(app.http, 'Other');
    const res = await preview(
      { policy: draft([{ type: 'deny_models', models: ['mock-1'] }]), since: start },
      other.adminKey,
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ actions_replayed: 0, changed: { total: 0 } });
  });

  it('counts no change for a call the agent record itself refused: the guardian refuses it before any policy', async () => {
    const own = await setUpInvoking(app.http, { models: ['mock-1', 'mock-3'] });
    await app.http.call('PATCH', `/v1/agents/${own.agentId}`, {
      token: own.org.adminKey,
      body: { allowed_models: ['mock-1'] },
    });
    const session = await openSession(app.http, own.org.adminKey, { agent_id: own.agentId, max_cost_usd: 1 });
    const since = new Date(Date.now() - 1000).toISOString();
    const ran = (model: string) => invoke(app.http, own.org.adminKey, invokeBody(session.id, { model }));
    const refused = await ran('mock-3');
    expect(refused.body).toMatchObject({ status: 'denied', decision: { reasons: [{ policy_id: null }] } });
    const allowed = await ran('mock-1');
    expect(allowed.body.status).toBe('succeeded');
    const res = await preview(
      { policy: draft([{ type: 'deny_models', models: ['mock-1', 'mock-3'] }]), since },
      own.org.adminKey,
    );
    expect(res.body).toMatchObject({
      actions_replayed: 2,
      changed: { total: 1, by_verdict: { 'allow->deny': 1 } },
    });
    expect(res.body.examples.map((e) => e.invocation_id)).toEqual([allowed.body.id]);
  });

  const clamp8 = draft([{ type: 'max_tokens', limit: 8 }]);
  const BAD: { label: string; body: Record<string, unknown>; field: string }[] = [
    {
      label: 'an unknown rule type',
      body: { policy: draft([{ type: 'nope' }]) },
      field: 'policy.rules.0.type',
    },
    {
      label: 'an empty model list',
      body: { policy: draft([{ type: 'deny_models', models: [] }]) },
      field: 'policy.rules.0.models',
    },
    {
      label: 'an invalid regex',
      body: { policy: draft([{ type: 'deny_pattern', pattern: '(a' }]) },
      field: 'policy.rules.0.pattern',
    },
    { label: 'no since', body: { policy: clamp8, since: undefined }, field: 'since' },
    { label: 'a since that is not a time', body: { policy: clamp8, since: 'yesterday' }, field: 'since' },
    { label: 'no policy', body: {}, field: 'policy' },
    { label: 'an unknown field', body: { policy: clamp8, limit: 5 }, field: 'body' },
  ];

  it.each(BAD)('$label -> 400 validation_error naming $field', async ({ body, field }) => {
    const res = await app.http.post<ErrorBody>(
      '/v1/policies/preview',
      { since: start, ...body },
      setup.org.adminKey,
    );
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('validation_error');
    expect(res.body.details.map((d) => d.path)).toContain(field);
  });

  it("refuses a draft that would take the org's patterns past their limit, as creating it would (400 policy.rules)", async () => {
    const org = await signupOrg(app.http, 'Patterns at the limit');
    // 1,203 instructions each: 50 of them are 60,150; the stored one and the draft, 120,300.
    const rules = Array.from({ length: 50 }, (_, i) => ({
      type: 'deny_pattern',
      pattern: `(?:\\w*${String.fromCharCode(97 + (i % 26))}){400}[^\\w]`,
    }));
    expect((await app.http.post('/v1/policies', { name: 'stored', rules }, org.adminKey)).status).toBe(201);
    const since = new Date(Date.now() - 60_000).toISOString();
    const res = await app.http.post<ErrorBody>(
      '/v1/policies/preview',
      { policy: draft(rules), since },
      org.adminKey,
    );
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([
      {
        path: 'policy.rules',
        message: expect.stringContaining('120300 instructions together, more than 100000'),
      },
    ]);
    const disabled = await preview({ policy: draft(rules, { enabled: false }), since }, org.adminKey);
    expect(disabled.status).toBe(200);
  }, 60_000);

  it('a window that ends before it starts is a 400 naming until', async () => {
    const res = await app.http.post<ErrorBody>(
      '/v1/policies/preview',
      { policy: draft([{ type: 'max_tokens', limit: 8 }]), since: middle, until: start },
      setup.org.adminKey,
    );
    expect(res.status).toBe(400);
    expect(res.body.details.map((d) => d.path)).toEqual(['until']);
  });

  it('a since in the future (until defaults to now) is a 400 naming since', async () => {
    const res = await app.http.post<ErrorBody>(
      '/v1/policies/preview',
      {
        policy: draft([{ type: 'max_tokens', limit: 8 }]),
        since: new Date(Date.now() + 60_000).toISOString(),
      },
      setup.org.adminKey,
    );
    expect(res.status).toBe(400);
    expect(res.body.details.map((d) => d.path)).toEqual(['since']);
  });

  it('needs policies:read: a key with policies:read passes, one with only policies:write gets 403', async () => {
    const body = { policy: draft([{ type: 'max_tokens', limit: 8 }]), since: start };
    const reader = await mintKey(app.http, setup.org.adminKey, ['policies:read'], 'reader');
    expect((await preview(body, reader.key)).status).toBe(200);
    const writer = await mintKey(app.http, setup.org.adminKey, ['policies:write'], 'writer');
    const res = await preview(body, writer.key);
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error_code: 'insufficient_scope', required_scope: 'policies:read' });
  });

  it('writes nothing: no policy, no policy_version bump', async () => {
    const version = async () =>
      Number((await app.infra.knex('orgs').where({ id: setup.org.orgId }).first()).policy_version);
    const before = await version();
    await previewOk({ policy: draft([{ type: 'deny_models', models: ['mock-1'] }]), since: start });
    expect(await version()).toBe(before);
    const list = await app.http.get<{ data: unknown[] }>('/v1/policies', setup.org.adminKey);
    expect(list.body.data).toHaveLength(0);
  });

  describe('with a policy already in force', () => {
    let current: string;
    beforeAll(async () => {
      const res = await app.http.post<{ id: string }>(
        '/v1/policies',
        { name: 'no mock-2', rules: [{ type: 'deny_models', models: ['mock-2'] }] },
        setup.org.adminKey,
      );
      expect(res.status).toBe(201);
      current = res.body.id;
    });
    afterAll(async () => {
      await app.http.delete(`/v1/policies/${current}`, setup.org.adminKey);
    });

    it('compares against the current set: calls it already denies do not change', async () => {
      const clamp = await previewOk({ policy: draft([{ type: 'max_tokens', limit: 8 }]), since: start });
      expect(clamp.changed).toEqual({ total: 3, by_verdict: { 'allow->modify': 3 } });
      const both = await previewOk({
        policy: draft([{ type: 'deny_models', models: ['mock-1', 'mock-2'] }]),
        since: start,
      });
      expect(both.changed).toEqual({ total: 3, by_verdict: { 'allow->deny': 3 } });
      expect(both.examples.map((e) => e.invocation_id)).toEqual(onMock1);
    });
  });

  describe('an invocation the guardian modified', () => {
    it('replays as recorded, modified: the original request is not kept (a documented limitation)', async () => {
      const redact = await app.http.post<{ id: string }>(
        '/v1/policies',
        { name: 'redact', rules: [{ type: 'redact_pattern', pattern: 'hunter2', replacement: '[x]' }] },
        setup.org.adminKey,
      );
      expect(redact.status).toBe(201);
      const session = await openSession(app.http, setup.org.adminKey, {
        agent_id: setup.agentId,
        max_cost_usd: 1,
      });
      const since = new Date(Date.now() - 5).toISOString();
      await call(session.id, 'mock-1', { messages: [{ role: 'user', content: 'my password is hunter2' }] });
      await app.http.delete(`/v1/policies/${redact.body.id}`, setup.org.adminKey);
      const deny = draft([{ type: 'deny_pattern', pattern: 'hunter2' }]);
      const body = await previewOk({ policy: deny, since });
      expect(body).toMatchObject({ actions_replayed: 1, changed: { total: 0 } });
      const redacted = await previewOk({
        policy: draft([{ type: 'deny_pattern', pattern: '\\[x\\]' }]),
        since,
      });
      expect(redacted.changed.total).toBe(1);
    });
  });
  describe('chat calls that offered tools or called them (the last calls of this file)', () => {
    it('replays the tools offered and the tool calls and their arguments in the conversation', async () => {
      const session = await openSession(app.http, setup.org.adminKey, {
        agent_id: setup.agentId,
        max_cost_usd: 1,
      });
      const since = new Date(Date.now() - 5).toISOString();
      const chat = async (body: Record<string, unknown>) => {
        const res = await app.http.call<{ id: string }>('POST', '/v1/chat/completions', {
          token: setup.org.adminKey,
          headers: { 'X-Session-Id': session.id },
          body: { model: 'mock-1', max_tokens: 16, ...body },
        });
        expect(res.status).toBe(200);
        return res.body.id;
      };
      const shell = { type: 'function', function: { name: 'shell' } };
      const offered = await chat({ messages: [{ role: 'user', content: 'tidy' }], tools: [shell] });
      const shellCall = {
        id: 'c1',
        type: 'function',
        function: { name: 'shell', arguments: '{"cmd":"rm -rf /"}' },
      };
      await chat({
        messages: [
          { role: 'user', content: 'tidy' },
          { role: 'assistant', content: null, tool_calls: [shellCall] },
          { role: 'tool', tool_call_id: 'c1', content: 'done' },
        ],
      });
      await chat({ messages: [{ role: 'user', content: 'hello' }] });
      const tools = await previewOk({ policy: draft([{ type: 'deny_tools', tools: ['shell'] }]), since });
      expect(tools).toMatchObject({ actions_replayed: 3, changed: { total: 2 } });
      expect(tools.examples[0]?.invocation_id).toBe(offered);
      const pattern = await previewOk({
        policy: draft([{ type: 'deny_pattern', pattern: 'rm -rf' }]),
        since,
      });
      expect(pattern.changed.total).toBe(1);
    });
  });
});
