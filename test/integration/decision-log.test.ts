import { createHash, randomBytes } from 'node:crypto';
import canonicalize from 'canonicalize';
import { newAuditEvent } from '../../domain/audit/new-event';
import { SYSTEM_ACTOR } from '../../domain/audit/audit-event';
import type { Decision } from '../../domain/policy/decision';
import { Guardian } from '../../domain/policy/guardian';
import { mintKey } from '../support/factories';
import {
  finished,
  invoke,
  invokeBody,
  openSession,
  setUpInvoking,
  type InvocationBody,
  type InvokeSetup,
} from '../support/invoke-fixtures';
import { startTestApp, type TestApp } from '../support/test-app';

interface ReasonBody {
  policy_id: string | null;
  code: string;
  message: string;
  rule_index: number | null;
}

interface DecisionBody {
  id: string;
  verdict: string;
  reasons: ReasonBody[];
  shadow_reasons: (ReasonBody & { verdict: string })[];
  modified_action: Record<string, unknown> | null;
  policy_version: number;
  action_digest: string | null;
  invocation_id: string | null;
  agent_id: string | null;
  session_id: string | null;
  evaluated_at: string;
}

interface Page {
  data: DecisionBody[];
  next_cursor: string | null;
}

const DECISION_KEYS = [
  'action_digest',
  'agent_id',
  'evaluated_at',
  'id',
  'invocation_id',
  'modified_action',
  'policy_version',
  'reasons',
  'session_id',
  'shadow_reasons',
  'verdict',
];

/** Prompt text the log must never hold. */
const SECRET = `prompt-text-${randomBytes(8).toString('hex')}`;
const TOOL = { name: 'lookup', arguments: { q: 'weather', n: 3 } };

let app: TestApp;
let setup: InvokeSetup;
let admin: string;
let otherAgentId: string;
const invocations: Record<'allowedA' | 'deniedA' | 'allowedB' | 'otherOrg', InvocationBody> = {} as never;
let sessionA: string;
let sessionB: string;
let other: InvokeSetup;

const list = (query = '', token = admin) => app.http.get<Page>(`/v1/acs/decisions${query}`, token);

async function run(token: string, sessionId: string, extra: Record<string, unknown> = {}) {
  const res = await invoke(app.http, token, invokeBody(sessionId, extra));
  if (res.status >= 300) throw new Error(`invoke: ${res.status} ${JSON.stringify(res.body)}`);
  return finished(app.http, token, res.body.id);
}

/** Every decision of the org (newest first), following the cursor. */
async function allPages(query: string, limit: number): Promise<DecisionBody[]> {
  const items: DecisionBody[] = [];
  let cursor: string | null = null;
  do {
    const sep = query ? '&' : '?';
    const res: { status: number; body: Page } = await list(
      `${query}${sep}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`,
    );
    expect(res.status).toBe(200);
    expect(res.body.data.length).toBeLessThanOrEqual(limit);
    items.push(...res.body.data);
    cursor = res.body.next_cursor;
  } while (cursor);
  return items;
}

const decisionFor = (invocation: InvocationBody) => invocation.decision?.id as string;

const digestOf = (action: unknown) =>
  createHash('sha256')
    .update(canonicalize(action) ?? '')
    .digest('hex');

beforeAll(async () => {
  app = await startTestApp({ workers: true });
  setup = await setUpInvoking(app.http);
  admin = setup.org.adminKey;
  // A priced model the agent is not allowed: the guardian's built-in check denies it.
  await app.http.call('PUT', '/v1/pricing/mock-2', {
    token: admin,
    body: { input_per_mtok_usd: 1, output_per_mtok_usd: 1 },
  });
  const agent = await app.http.post<{ id: string }>(
    '/v1/agents',
    { name: 'second', allowed_models: ['mock-1'], credential_refs: [setup.credentialRef] },
    admin,
  );
  otherAgentId = agent.body.id;
  sessionA = (await openSession(app.http, admin, { max_cost_usd: 1, agent_id: setup.agentId })).id;
  sessionB = (await openSession(app.http, admin, { max_cost_usd: 1, agent_id: otherAgentId })).id;
  invocations.allowedA = await run(admin, sessionA, { messages: [{ role: 'user', content: SECRET }] });
  invocations.deniedA = await run(admin, sessionA, { model: 'mock-2' });
  invocations.allowedB = await run(admin, sessionB, { tool: TOOL });
  other = await setUpInvoking(app.http);
  const otherSession = await openSession(app.http, other.org.adminKey, {
    max_cost_usd: 1,
    agent_id: other.agentId,
  });
  invocations.otherOrg = await run(other.org.adminKey, otherSession.id);
});
afterAll(() => app.close());

describe('GET /v1/acs/decisions', () => {
  it('lists the decisions of invocations, newest first, in the contract shape', async () => {
    const res = await list();
    expect(res.status).toBe(200);
    const ids = res.body.data.map((d) => d.id);
    expect(ids).toEqual([
      decisionFor(invocations.allowedB),
      decisionFor(invocations.deniedA),
      decisionFor(invocations.allowedA),
    ]);
    const times = res.body.data.map((d) => Date.parse(d.evaluated_at));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    for (const d of res.body.data) expect(Object.keys(d).sort()).toEqual(DECISION_KEYS);
    expect(res.body.data[1]).toMatchObject({
      verdict: 'deny',
      reasons: [{ policy_id: null, code: 'model_not_allowed', rule_index: null }],
      shadow_reasons: [],
      modified_action: null,
      invocation_id: invocations.deniedA.id,
      agent_id: setup.agentId,
      session_id: sessionA,
    });
    expect(res.body.next_cursor).toBeNull();
  });

  it("never lists another org's decisions", async () => {
    const res = await list('?limit=100');
    expect(res.body.data.map((d) => d.id)).not.toContain(decisionFor(invocations.otherOrg));
    const theirs = await list('', other.org.adminKey);
    expect(theirs.body.data.map((d) => d.id)).toEqual([decisionFor(invocations.otherOrg)]);
  });

  it('filters by agent, session and verdict', async () => {
    const byAgent = await list(`?agent_id=${otherAgentId}`);
    expect(byAgent.body.data.map((d) => d.id)).toEqual([decisionFor(invocations.allowedB)]);
    const bySession = await list(`?session_id=${sessionA}`);
    expect(bySession.body.data.map((d) => d.id)).toEqual([
      decisionFor(invocations.deniedA),
      decisionFor(invocations.allowedA),
    ]);
    const denied = await list('?verdict=deny');
    expect(denied.body.data.map((d) => d.id)).toEqual([decisionFor(invocations.deniedA)]);
    const combined = await list(`?session_id=${sessionA}&verdict=allow`);
    expect(combined.body.data.map((d) => d.id)).toEqual([decisionFor(invocations.allowedA)]);
  });

  it('filters by time: since inclusive, until exclusive', async () => {
    const all = (await list()).body.data;
    const middle = all[1] as DecisionBody;
    const since = await list(`?since=${middle.evaluated_at}`);
    expect(since.body.data.map((d) => d.id)).toEqual([all[0]?.id, middle.id]);
    const until = await list(`?until=${middle.evaluated_at}`);
    expect(until.body.data.map((d) => d.id)).toEqual([all[2]?.id]);
  });

  it('refuses bad filters and forged cursors with 400 validation_error', async () => {
    for (const query of ['?verdict=maybe', '?since=yesterday', '?limit=0', '?cursor=bm9wZQ', '?colour=red']) {
      const res = await list(query);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ error_code: 'validation_error' });
    }
    const forged = Buffer.from(JSON.stringify({ p: 'not-a-date|dec_x' })).toString('base64url');
    expect((await list(`?cursor=${forged}`)).status).toBe(400);
  });

  it('needs audit:read', async () => {
    const reader = await mintKey(app.http, admin, ['audit:read']);
    expect((await list('', reader.key)).status).toBe(200);
    const invoker = await mintKey(app.http, admin, ['llm:invoke']);
    const res = await list('', invoker.key);
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error_code: 'insufficient_scope', required_scope: 'audit:read' });
  });
});

describe('GET /v1/acs/decisions/{id}', () => {
  it('answers the decision of an invocation, as listed', async () => {
    const id = decisionFor(invocations.deniedA);
    const res = await app.http.get<DecisionBody>(`/v1/acs/decisions/${id}`, admin);
    expect(res.status).toBe(200);
    const listed = (await list('?verdict=deny')).body.data[0];
    expect(res.body).toEqual(listed);
    expect(res.body.policy_version).toBe(0);
  });

  it("answers 404 not_found for another org's decision and for an unknown id", async () => {
    for (const id of [decisionFor(invocations.otherOrg), 'dec_doesnotexist']) {
      const res = await app.http.get<{ error_code: string }>(`/v1/acs/decisions/${id}`, admin);
      expect(res.status).toBe(404);
      expect(res.body.error_code).toBe('not_found');
    }
  });
});

describe('what a decision keeps of the action', () => {
  it('action_digest is the SHA-256 (hex) of the canonical JSON of the action the guardian saw', async () => {
    const byId = async (inv: InvocationBody) =>
      (await app.http.get<DecisionBody>(`/v1/acs/decisions/${decisionFor(inv)}`, admin)).body;
    const a = await byId(invocations.allowedA);
    expect(a.action_digest).toMatch(/^[0-9a-f]{64}$/);
    expect(a.action_digest).toBe(
      digestOf({
        type: 'llm.invoke',
        model: 'mock-1',
        messages: [{ role: 'user', content: SECRET }],
        max_tokens: 16,
      }),
    );
    const b = await byId(invocations.allowedB);
    expect(b.action_digest).toBe(
      digestOf({
        type: 'llm.invoke',
        model: 'mock-1',
        messages: [{ role: 'user', content: 'hello' }],
        max_tokens: 16,
        tool: TOOL,
      }),
    );
    expect(b.action_digest).not.toBe(a.action_digest);
  });

  it('the stored row holds no prompt text', async () => {
    const { rows } = (await app.infra.knex.raw(
      'select row_to_json(d)::text as row from decisions d where id = ?',
      [decisionFor(invocations.allowedA)],
    )) as { rows: { row: string }[] };
    expect(rows).toHaveLength(1);
    expect(rows[0]?.row).toContain(decisionFor(invocations.allowedA));
    expect(rows[0]?.row).not.toContain(SECRET);
  });

  it('a modify verdict keeps the modified action without its messages; the invocation runs the modified request', async () => {
    const redacted = `redacted-${SECRET}`;
    const original = app.infra.guardian;
    app.infra.guardian = new Guardian({
      evaluate: async ({ action }) => ({
        verdict: 'modify',
        reasons: [{ policyId: 'pol_redact', code: 'redact_pattern', message: 'redacted', ruleIndex: 0 }],
        shadowReasons: [],
        modifiedAction: { ...action, messages: [{ role: 'user', content: redacted }], maxTokens: 8 },
        approval: null,
        policyVersion: 7,
      }),
    });
    try {
      const inv = await run(admin, sessionA, { messages: [{ role: 'user', content: SECRET }] });
      expect(inv.status).toBe('succeeded');
      const res = await app.http.get<DecisionBody>(`/v1/acs/decisions/${decisionFor(inv)}`, admin);
      expect(res.body).toMatchObject({
        verdict: 'modify',
        reasons: [{ policy_id: 'pol_redact', code: 'redact_pattern', rule_index: 0 }],
        modified_action: { type: 'llm.invoke', model: 'mock-1', max_tokens: 8 },
        policy_version: 7,
      });
      expect(res.body.modified_action).not.toHaveProperty('messages');
      const { rows } = (await app.infra.knex.raw(
        'select row_to_json(d)::text as row from decisions d where id = ?',
        [decisionFor(inv)],
      )) as { rows: { row: string }[] };
      expect(rows[0]?.row).not.toContain(SECRET);
      const stored = await app.infra.knex('invocations').where({ id: inv.id }).first();
      expect(stored.request).toMatchObject({ messages: [{ content: redacted }], max_tokens: 8 });
    } finally {
      app.infra.guardian = original;
    }
  });
});

describe('the decision log port', () => {
  const at = new Date('2020-01-01T00:00:00.000Z');
  const decision = (id: string, extra: Partial<Decision> = {}): Decision => ({
    id,
    orgId: setup.org.orgId,
    invocationId: null,
    sessionId: null,
    agentId: null,
    verdict: 'allow',
    reasons: [],
    shadowReasons: [],
    modifiedAction: null,
    policyVersion: 3,
    actionDigest: digestOf({ type: 'tool.call' }),
    evaluatedAt: at,
    ...extra,
  });
  const eventFor = (d: Decision) =>
    newAuditEvent({
      orgId: d.orgId,
      actor: SYSTEM_ACTOR,
      action: 'acs.evaluated',
      resource: { type: 'decision', id: d.id },
      at: d.evaluatedAt,
      requestId: null,
      outcome: 'success',
      details: { decision_id: d.id },
    });
  const auditCount = async (resourceId: string) => {
    const { rows } = (await app.infra.knex.raw(
      `select (select count(*) from audit_outbox where resource_id = ?)
        + (select count(*) from audit_entries where resource_id = ?) as n`,
      [resourceId, resourceId],
    )) as { rows: { n: string }[] };
    return Number(rows[0]?.n);
  };

  beforeAll(async () => {
    // Five decisions at one instant: the cursor must break the tie on the id.
    for (const n of [1, 2, 3, 4, 5]) {
      const d = decision(`dec_tie${n}`);
      await app.infra.decisionLog.record(d, eventFor(d));
    }
    const enforced = decision('dec_policy', {
      verdict: 'deny',
      reasons: [{ policyId: 'pol_enforced', code: 'deny_models', message: 'no', ruleIndex: 2 }],
      shadowReasons: [
        { policyId: 'pol_trial', code: 'deny_tools', message: 'would deny', ruleIndex: 0, verdict: 'deny' },
      ],
      evaluatedAt: new Date(at.getTime() + 1000),
    });
    await app.infra.decisionLog.record(enforced, eventFor(enforced));
  });

  it('record writes the decision and its audit entry', async () => {
    expect(await auditCount('dec_policy')).toBe(1);
    const res = await app.http.get<DecisionBody>('/v1/acs/decisions/dec_policy', admin);
    expect(res.body).toMatchObject({
      verdict: 'deny',
      reasons: [{ policy_id: 'pol_enforced', code: 'deny_models', message: 'no', rule_index: 2 }],
      shadow_reasons: [
        { policy_id: 'pol_trial', code: 'deny_tools', message: 'would deny', rule_index: 0, verdict: 'deny' },
      ],
      policy_version: 3,
      invocation_id: null,
      evaluated_at: '2020-01-01T00:00:01.000Z',
    });
  });

  it('record writes neither when one of them fails', async () => {
    const duplicate = decision('dec_tie1');
    const event = eventFor(duplicate);
    await expect(app.infra.decisionLog.record(duplicate, event)).rejects.toThrow();
    const { rows } = (await app.infra.knex.raw(
      'select (select count(*) from audit_outbox where id = ?) + (select count(*) from audit_entries where id = ?) as n',
      [event.id, event.id],
    )) as { rows: { n: string }[] };
    expect(Number(rows[0]?.n)).toBe(0);
  });

  it('filters by policy: a reason or a shadow reason naming it', async () => {
    expect((await list('?policy_id=pol_enforced')).body.data.map((d) => d.id)).toEqual(['dec_policy']);
    expect((await list('?policy_id=pol_trial')).body.data.map((d) => d.id)).toEqual(['dec_policy']);
    expect((await list('?policy_id=pol_none')).body.data).toEqual([]);
    expect((await list('?policy_id=pol_redact')).body.data.map((d) => d.verdict)).toEqual(['modify']);
  });

  it('pages with the cursor without duplicates or gaps, ties broken by id', async () => {
    const everything = (await list('?limit=100')).body.data.map((d) => d.id);
    expect(everything.length).toBe(10);
    for (const limit of [1, 2, 3, 4])
      expect((await allPages('', limit)).map((d) => d.id)).toEqual(everything);
    const ties = everything.filter((id) => id.startsWith('dec_tie'));
    expect(ties).toEqual(['dec_tie5', 'dec_tie4', 'dec_tie3', 'dec_tie2', 'dec_tie1']);
    // Filters hold across pages too.
    const until = '2020-01-01T00:00:00.500Z';
    expect((await allPages(`?until=${until}`, 2)).map((d) => d.id)).toEqual(ties);
  });
});
