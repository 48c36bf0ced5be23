import {
  MAX_LIST_ITEMS,
  MAX_ORG_LIST_ITEMS,
  MAX_ORG_PATTERN_PROGRAM,
  MAX_PATTERN_LENGTH,
  MAX_POLICIES_PER_ORG,
  MAX_RULES_PER_POLICY,
} from '../../domain/policy/limits';
import { RE2JS } from 're2js';
import { EVALUATION_BURST_MS } from '../../domain/policy/evaluation-time';
import { mintKey, signupOrg, type SignedUpOrg } from '../support/factories';
import { startTestApp, type TestApp } from '../support/test-app';

interface PolicyBody {
  id: string;
  name: string;
  description: string | null;
  enabled: boolean;
  priority: number;
  mode: string;
  applies_to: Record<string, string[]>;
  rules: Record<string, unknown>[];
  version: number;
  created_at: string;
  updated_at: string;
  policy_version?: number;
}
interface ErrorBody {
  error_code: string;
  details: { path: string; message: string }[];
}
interface AuditRow {
  action: string;
  actor_id: string;
  resource_id: string;
  details: { policy_version: number; old: PolicyBody | null; new: PolicyBody | null };
}

let app: TestApp;
let org: SignedUpOrg;
let other: SignedUpOrg;

beforeAll(async () => {
  app = await startTestApp();
  org = await signupOrg(app.http);
  other = await signupOrg(app.http, 'Other');
});
afterAll(() => app.close());

const minimal = { name: 'cap output', rules: [{ type: 'max_tokens', limit: 256 }] };

const EVERY_RULE = [
  { type: 'deny_models', models: ['gpt-4'] },
  { type: 'allow_models_only', models: ['gpt-4o-mini', 'claude-haiku-4-5'] },
  { type: 'deny_tools', tools: ['shell'] },
  { type: 'deny_pattern', pattern: '(?i)password\\s*[:=]', flags: 'm' },
  { type: 'redact_pattern', pattern: '\\b\\d{3}-\\d{2}-\\d{4}\\b', replacement: '[ssn]' },
  { type: 'max_tokens', limit: 1024 },
  { type: 'max_cost_per_call_usd', limit: 0.25 },
  {
    type: 'require_approval',
    when: { models: ['o3'], tools: ['deploy'], min_estimated_cost_usd: 1.5 },
    approvers_required: 2,
    timeout_seconds: 600,
  },
];

const create = (body: unknown, token = org.adminKey) =>
  app.http.post<PolicyBody>('/v1/policies', body, token);
const put = (id: string, body: unknown, token = org.adminKey) =>
  app.http.call<PolicyBody>('PUT', `/v1/policies/${id}`, { token, body });
const get = (id: string, token = org.adminKey) => app.http.get<PolicyBody>(`/v1/policies/${id}`, token);
const remove = (id: string, token = org.adminKey) => app.http.delete(`/v1/policies/${id}`, token);

const orgVersion = async (orgId: string): Promise<number> =>
  Number((await app.infra.knex('orgs').where({ id: orgId }).first()).policy_version);

/** Audit events about a policy, sealed or still in the outbox, oldest first. */
async function auditOfPolicy(policyId: string): Promise<AuditRow[]> {
  const { rows } = (await app.infra.knex.raw(
    `select action, actor_id, resource_id, details, at from audit_outbox where resource_id = ?
     union all select action, actor_id, resource_id, details, at from audit_entries where resource_id = ?
     order by at`,
    [policyId, policyId],
  )) as { rows: AuditRow[] };
  return rows;
}

describe('policies CRUD', () => {
  it('creates a policy with every field and every rule type, at version 1, bumping policy_version', async () => {
    const before = await orgVersion(org.orgId);
    const body = {
      name: 'guardrails',
      description: 'what prod agents may do',
      enabled: true,
      priority: 10,
      mode: 'shadow',
      applies_to: {
        agent_ids: ['agt_a'],
        models: ['gpt-4o'],
        action_types: ['llm.invoke'],
        tools: ['search'],
      },
      rules: EVERY_RULE,
    };
    const res = await create(body);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ ...body, version: 1, policy_version: before + 1 });
    expect(res.body.id).toMatch(/^pol_/);
    expect(res.body.created_at).toMatch(/Z$/);
    expect(res.body.updated_at).toBe(res.body.created_at);
    expect(await orgVersion(org.orgId)).toBe(before + 1);
    expect((await get(res.body.id)).body).toEqual(res.body);
  });

  it('fills the defaults: enabled, priority 0, enforce, applies to everything, 1 approver for an hour', async () => {
    const res = await create({ name: 'approve all', rules: [{ type: 'require_approval' }] });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      description: null,
      enabled: true,
      priority: 0,
      mode: 'enforce',
      applies_to: {},
      rules: [{ type: 'require_approval', when: {}, approvers_required: 1, timeout_seconds: 3600 }],
    });
  });

  it('accepts a pattern that would backtrack catastrophically on JavaScript regexes (RE2 runs it in linear time)', async () => {
    const res = await create({ name: 'nested', rules: [{ type: 'deny_pattern', pattern: '(a+)+$' }] });
    expect(res.status).toBe(201);
  });

  it('lists the org policies newest first, a page at a time, and never another org', async () => {
    const fresh = await signupOrg(app.http, 'Lister');
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1)
      ids.push((await create({ ...minimal, name: `p${i}` }, fresh.adminKey)).body.id);
    await create(minimal, other.adminKey);
    const first = await app.http.get<{ data: PolicyBody[]; next_cursor: string | null }>(
      '/v1/policies?limit=3',
      fresh.adminKey,
    );
    expect(first.status).toBe(200);
    expect(first.body.data.map((p) => p.id)).toEqual(ids.slice(2).reverse());
    expect(first.body.next_cursor).not.toBeNull();
    const second = await app.http.get<{ data: PolicyBody[]; next_cursor: string | null }>(
      `/v1/policies?limit=3&cursor=${first.body.next_cursor}`,
      fresh.adminKey,
    );
    expect(second.body.data.map((p) => p.id)).toEqual(ids.slice(0, 2).reverse());
    expect(second.body.next_cursor).toBeNull();
  });

  it("shows the org's current policy_version on get and list, and it moves with an update", async () => {
    const fresh = await signupOrg(app.http, 'Versions');
    const a = (await create(minimal, fresh.adminKey)).body;
    const b = (await create({ ...minimal, name: 'b' }, fresh.adminKey)).body;
    const listed = async () =>
      (await app.http.get<{ data: PolicyBody[] }>('/v1/policies', fresh.adminKey)).body.data.map((p) => [
        p.id,
        p.policy_version,
      ]);
    expect(b.policy_version).toBe(2);
    expect((await get(a.id, fresh.adminKey)).body).toMatchObject({ version: 1, policy_version: 2 });
    expect(await listed()).toEqual([
      [b.id, 2],
      [a.id, 2],
    ]);

    const updated = (await put(a.id, { ...minimal, name: 'a2' }, fresh.adminKey)).body;
    expect(updated.policy_version).toBe(3);
    expect((await get(a.id, fresh.adminKey)).body).toEqual(updated);
    expect((await get(b.id, fresh.adminKey)).body.policy_version).toBe(3);
    expect(await listed()).toEqual([
      [b.id, 3],
      [a.id, 3],
    ]);
    expect(await orgVersion(fresh.orgId)).toBe(3);
  });

  it('replaces a policy on PUT: version + 1, policy_version + 1, absent optional fields back to defaults', async () => {
    const created = (await create({ ...minimal, priority: 5, mode: 'shadow', description: 'd' })).body;
    const res = await put(created.id, { name: 'renamed', rules: [{ type: 'deny_tools', tools: ['shell'] }] });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: created.id,
      name: 'renamed',
      description: null,
      priority: 0,
      mode: 'enforce',
      rules: [{ type: 'deny_tools', tools: ['shell'] }],
      version: 2,
      created_at: created.created_at,
      policy_version: (created.policy_version as number) + 1,
    });
    expect(res.body.updated_at > created.updated_at).toBe(true);
    expect((await get(created.id)).body.name).toBe('renamed');
  });

  it('leaves everything as it was on a PUT that changes nothing (no version, no audit entry)', async () => {
    const created = (await create(minimal)).body;
    const versionBefore = await orgVersion(org.orgId);
    const res = await put(created.id, { ...minimal, enabled: true, priority: 0, applies_to: {} });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      version: 1,
      updated_at: created.updated_at,
      policy_version: versionBefore,
    });
    expect(await orgVersion(org.orgId)).toBe(versionBefore);
    expect((await auditOfPolicy(created.id)).map((e) => e.action)).toEqual(['policy.created']);
  });

  it('deletes a policy: 204, then it is gone from get, list, put and delete (404)', async () => {
    const created = (await create(minimal)).body;
    const before = await orgVersion(org.orgId);
    const res = await remove(created.id);
    expect(res.status).toBe(204);
    expect(await orgVersion(org.orgId)).toBe(before + 1);
    expect((await get(created.id)).status).toBe(404);
    expect((await put(created.id, minimal)).status).toBe(404);
    const again = await remove(created.id);
    expect(again.status).toBe(404);
    expect(again.body.error_code).toBe('not_found');
    expect(await orgVersion(org.orgId)).toBe(before + 1);
    const listed = await app.http.get<{ data: PolicyBody[] }>('/v1/policies?limit=100', org.adminKey);
    expect(listed.body.data.map((p) => p.id)).not.toContain(created.id);
  });

  it("answers 404 not_found for an unknown id and for another org's policy, changing nothing", async () => {
    const theirs = (await create(minimal, other.adminKey)).body;
    const before = await orgVersion(other.orgId);
    for (const id of ['pol_doesnotexist', theirs.id]) {
      for (const res of [await get(id), await put(id, minimal), await remove(id)]) {
        expect(res.status).toBe(404);
        expect(res.body).toMatchObject({ error_code: 'not_found' });
      }
    }
    expect(await orgVersion(other.orgId)).toBe(before);
    expect((await get(theirs.id, other.adminKey)).body.version).toBe(1);
  });

  it('lets a key with policies:read read but not write, and policies:write write', async () => {
    const reader = await mintKey(app.http, org.adminKey, ['policies:read']);
    const writer = await mintKey(app.http, org.adminKey, ['policies:write']);
    const created = await create(minimal, writer.key);
    expect(created.status).toBe(201);
    expect((await get(created.body.id, reader.key)).status).toBe(200);
    const refused = await create(minimal, reader.key);
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({
      error_code: 'insufficient_scope',
      required_scope: 'policies:write',
    });
  });
});

describe('a policy read, edited and sent back (QA)', () => {
  it('takes what GET shows as the body of PUT: read-only fields ignored, the id checked', async () => {
    const created = await create({
      name: 'round trip',
      rules: [{ type: 'require_approval', when: { tools: ['deploy'] }, approvers_required: 2 }],
    });
    const read = (await get(created.body.id)).body;
    const same = await put(read.id, read);
    expect(same.status).toBe(200);
    expect(same.body).toMatchObject({ version: 1, rules: read.rules });
    const renamed = await put(read.id, { ...read, name: 'round trip, renamed' });
    expect(renamed.body).toMatchObject({ version: 2, name: 'round trip, renamed' });
    const other = await create(minimal);
    const crossed = await app.http.call<ErrorBody>('PUT', `/v1/policies/${other.body.id}`, {
      token: org.adminKey,
      body: read,
    });
    expect(crossed.status).toBe(400);
    expect(crossed.body).toMatchObject({ error_code: 'validation_error', details: [{ path: 'id' }] });
  });

  it('refuses with 409 conflict a change made from a version the policy is no longer at, changing nothing', async () => {
    const created = await create(minimal);
    const read = (await get(created.body.id)).body;
    // Two editors read version 1; the first one's change lands.
    expect((await put(read.id, { ...read, name: 'first editor' })).body.version).toBe(2);
    const before = await orgVersion(org.orgId);
    const stale = await app.http.call<ErrorBody>('PUT', `/v1/policies/${read.id}`, {
      token: org.adminKey,
      body: { ...read, name: 'second editor' },
    });
    expect(stale.status).toBe(409);
    expect(stale.body).toMatchObject({
      error_code: 'conflict',
      message: expect.stringContaining('version 2'),
    });
    expect((await get(read.id)).body).toMatchObject({ name: 'first editor', version: 2 });
    expect(await orgVersion(org.orgId)).toBe(before);
    // Without a version, the change is made whatever the version (as before).
    const { version: _v, ...unversioned } = read;
    expect((await put(read.id, { ...unversioned, name: 'second editor' })).body.version).toBe(3);
  });
});

describe('policy_version under concurrent writers', () => {
  it('gives 20 parallel creates in one org the distinct, gapless versions 1..20', async () => {
    const fresh = await signupOrg(app.http, 'Parallel');
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => create({ ...minimal, name: `p${i}` }, fresh.adminKey)),
    );
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(201));
    const versions = results.map((r) => r.body.policy_version as number).sort((a, b) => a - b);
    expect(versions).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(await orgVersion(fresh.orgId)).toBe(20);
  });

  it('serializes mixed parallel writes (creates, puts, deletes): one version each, no gap', async () => {
    const fresh = await signupOrg(app.http, 'Mixed');
    const seeded = [];
    for (let i = 0; i < 6; i += 1)
      seeded.push((await create({ ...minimal, name: `s${i}` }, fresh.adminKey)).body);
    const writes = [
      ...seeded.slice(0, 3).map((p, i) => put(p.id, { ...minimal, name: `put${i}` }, fresh.adminKey)),
      ...seeded.slice(3).map((p) => remove(p.id, fresh.adminKey)),
      ...Array.from({ length: 4 }, (_, i) => create({ ...minimal, name: `c${i}` }, fresh.adminKey)),
    ];
    const results = await Promise.all(writes);
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 201, 201, 201, 201, 204, 204, 204]);
    expect(await orgVersion(fresh.orgId)).toBe(6 + 10);
    const events = await app.infra
      .knex('audit_outbox')
      .where({ org_id: fresh.orgId })
      .whereLike('action', 'policy.%');
    const sealed = await app.infra
      .knex('audit_entries')
      .where({ org_id: fresh.orgId })
      .whereLike('action', 'policy.%');
    const versions = [...events, ...sealed]
      .map((e: { details: { policy_version: number } }) => e.details.policy_version)
      .sort((a, b) => a - b);
    expect(versions).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));
  });

  it('loads a policy set whose policies are exactly those of its version, even while writers run', async () => {
    const fresh = await signupOrg(app.http, 'Snapshot');
    const writes = Promise.all(
      Array.from({ length: 15 }, (_, i) => create({ ...minimal, name: `w${i}` }, fresh.adminKey)),
    );
    const sets = [];
    for (let i = 0; i < 30; i += 1) sets.push(await app.infra.policySets.loadPolicySet(fresh.orgId));
    await writes;
    sets.push(await app.infra.policySets.loadPolicySet(fresh.orgId));
    // Creates only: version n means exactly n policies; a mixed read would break the equality.
    for (const set of sets) expect(set.policies).toHaveLength(set.policyVersion);
    expect(sets.at(-1)?.policyVersion).toBe(15);
    expect(await app.infra.policySets.policyVersion(fresh.orgId)).toBe(15);
  });

  it('loads enabled and disabled policies in the domain shape, highest priority first, without deleted ones', async () => {
    const fresh = await signupOrg(app.http, 'Loaded');
    const low = (await create({ ...minimal, priority: -1 }, fresh.adminKey)).body;
    const off = (
      await create({ name: 'off', enabled: false, priority: 7, rules: [EVERY_RULE[7]] }, fresh.adminKey)
    ).body;
    const gone = (await create(minimal, fresh.adminKey)).body;
    await remove(gone.id, fresh.adminKey);
    const set = await app.infra.policySets.loadPolicySet(fresh.orgId);
    expect(set.policyVersion).toBe(4);
    expect(set.policies.map((p) => p.id)).toEqual([off.id, low.id]);
    expect(set.policies[0]).toMatchObject({
      orgId: fresh.orgId,
      enabled: false,
      mode: 'enforce',
      appliesTo: {},
      rules: [
        {
          type: 'require_approval',
          when: { models: ['o3'], tools: ['deploy'], minEstimatedCostUsd: 1.5 },
          approversRequired: 2,
          timeoutSeconds: 600,
        },
      ],
    });
    expect(set.policies[0]?.createdAt).toBeInstanceOf(Date);
  });
});

describe('policy audit', () => {
  it('records created, updated and deleted with the old and new policy and the policy_version', async () => {
    const created = (await create({ ...minimal, applies_to: { tools: ['shell'] } })).body;
    const updated = (await put(created.id, { ...minimal, name: 'v2' })).body;
    await remove(created.id);
    const events = await auditOfPolicy(created.id);
    expect(events.map((e) => e.action)).toEqual(['policy.created', 'policy.updated', 'policy.deleted']);
    expect(new Set(events.map((e) => e.actor_id))).toEqual(new Set([org.adminKeyId]));
    const [c, u, d] = events as [AuditRow, AuditRow, AuditRow];
    const { policy_version: _c, ...createdDoc } = created;
    const { policy_version: _u, ...updatedDoc } = updated;
    expect(c.details).toEqual({ policy_version: created.policy_version, old: null, new: createdDoc });
    expect(u.details).toEqual({ policy_version: updated.policy_version, old: createdDoc, new: updatedDoc });
    expect(d.details).toEqual({
      policy_version: (updated.policy_version as number) + 1,
      old: updatedDoc,
      new: null,
    });
  });

  it('writes nothing for a refused change', async () => {
    const before = await orgVersion(org.orgId);
    const res = await create({ ...minimal, rules: [{ type: 'deny_pattern', pattern: '(' }] });
    expect(res.status).toBe(400);
    expect(await orgVersion(org.orgId)).toBe(before);
    const requestId = res.headers.get('x-request-id');
    expect(await app.infra.knex('audit_outbox').where({ request_id: requestId })).toEqual([]);
  });
});

type Case = [label: string, body: unknown, field: string];

const long = (n: number) => 'x'.repeat(n);
const withRule = (rule: unknown) => ({ ...minimal, rules: [rule] });
const approval = { type: 'require_approval' };
const items = (n: number) => Array.from({ length: n }, (_, i) => `m${i}`);

/** Each field of a policy body: missing, wrong type, out of range, over a limit (bodies are strict). */
const CASES: Case[] = [
  ['name missing', { rules: minimal.rules }, 'name'],
  ['name blank', { ...minimal, name: '   ' }, 'name'],
  ['name too long', { ...minimal, name: long(101) }, 'name'],
  ['name a number', { ...minimal, name: 5 }, 'name'],
  ['description too long', { ...minimal, description: long(2001) }, 'description'],
  ['enabled a string', { ...minimal, enabled: 'yes' }, 'enabled'],
  ['priority 1.5', { ...minimal, priority: 1.5 }, 'priority'],
  ['priority 1001', { ...minimal, priority: 1001 }, 'priority'],
  ['mode unknown', { ...minimal, mode: 'audit' }, 'mode'],
  ['rules missing', { name: 'x' }, 'rules'],
  ['rules empty', { ...minimal, rules: [] }, 'rules'],
  ['rules an object', { ...minimal, rules: minimal.rules[0] }, 'rules'],
  [
    `more than ${MAX_RULES_PER_POLICY} rules`,
    { ...minimal, rules: Array(MAX_RULES_PER_POLICY + 1).fill(minimal.rules[0]) },
    'rules',
  ],
  ['an unknown rule type', withRule({ type: 'deny_everything' }), 'rules.0.type'],
  ['a rule without a type', withRule({ models: ['gpt-4o'] }), 'rules.0.type'],
  ['a rule with an unknown field', withRule({ type: 'max_tokens', limit: 5, soft: true }), 'rules.0'],
  ['deny_models without models', withRule({ type: 'deny_models' }), 'rules.0.models'],
  ['deny_models with no models', withRule({ type: 'deny_models', models: [] }), 'rules.0.models'],
  [
    'deny_models with a bad model name',
    withRule({ type: 'deny_models', models: ['gpt 4'] }),
    'rules.0.models.0',
  ],
  [
    `deny_models with ${MAX_LIST_ITEMS + 1} models`,
    withRule({ type: 'deny_models', models: items(MAX_LIST_ITEMS + 1) }),
    'rules.0.models',
  ],
  ['allow_models_only with no models', withRule({ type: 'allow_models_only', models: [] }), 'rules.0.models'],
  ['deny_tools with no tools', withRule({ type: 'deny_tools', tools: [] }), 'rules.0.tools'],
  ['deny_tools with a blank tool', withRule({ type: 'deny_tools', tools: [' '] }), 'rules.0.tools.0'],
  ['deny_pattern with an invalid regex', withRule({ type: 'deny_pattern', pattern: '(' }), 'rules.0.pattern'],
  [
    'deny_pattern with a backreference',
    withRule({ type: 'deny_pattern', pattern: '(a)\\1' }),
    'rules.0.pattern',
  ],
  ['deny_pattern with a lookahead', withRule({ type: 'deny_pattern', pattern: 'a(?=b)' }), 'rules.0.pattern'],
  ['deny_pattern empty', withRule({ type: 'deny_pattern', pattern: '' }), 'rules.0.pattern'],
  [
    `deny_pattern over ${MAX_PATTERN_LENGTH} characters`,
    withRule({ type: 'deny_pattern', pattern: long(MAX_PATTERN_LENGTH + 1) }),
    'rules.0.pattern',
  ],
  ['deny_pattern with flag g', withRule({ type: 'deny_pattern', pattern: 'a', flags: 'g' }), 'rules.0.flags'],
  [
    'deny_pattern with a repeated flag',
    withRule({ type: 'deny_pattern', pattern: 'a', flags: 'ii' }),
    'rules.0.flags',
  ],
  [
    'redact_pattern with an invalid regex',
    withRule({ type: 'redact_pattern', pattern: '[a-', replacement: 'x' }),
    'rules.0.pattern',
  ],
  [
    'redact_pattern that matches empty text',
    withRule({ type: 'redact_pattern', pattern: 'a*', replacement: 'x' }),
    'rules.0.pattern',
  ],
  [
    'redact_pattern that matches only at word boundaries',
    withRule({ type: 'redact_pattern', pattern: '\\b', replacement: 'x' }),
    'rules.0.pattern',
  ],
  [
    'redact_pattern without replacement',
    withRule({ type: 'redact_pattern', pattern: 'a' }),
    'rules.0.replacement',
  ],
  ['max_tokens limit 0', withRule({ type: 'max_tokens', limit: 0 }), 'rules.0.limit'],
  ['max_tokens limit -5', withRule({ type: 'max_tokens', limit: -5 }), 'rules.0.limit'],
  ['max_tokens limit 1.5', withRule({ type: 'max_tokens', limit: 1.5 }), 'rules.0.limit'],
  ['max_tokens limit a string', withRule({ type: 'max_tokens', limit: '5' }), 'rules.0.limit'],
  ['max_cost_per_call_usd limit 0', withRule({ type: 'max_cost_per_call_usd', limit: 0 }), 'rules.0.limit'],
  ['max_cost_per_call_usd limit -1', withRule({ type: 'max_cost_per_call_usd', limit: -1 }), 'rules.0.limit'],
  [
    'max_cost_per_call_usd with seven decimals',
    withRule({ type: 'max_cost_per_call_usd', limit: 0.0000001 }),
    'rules.0.limit',
  ],
  [
    'require_approval timeout_seconds 0',
    withRule({ ...approval, timeout_seconds: 0 }),
    'rules.0.timeout_seconds',
  ],
  [
    'require_approval timeout_seconds 604801',
    withRule({ ...approval, timeout_seconds: 604_801 }),
    'rules.0.timeout_seconds',
  ],
  [
    'require_approval approvers_required 0',
    withRule({ ...approval, approvers_required: 0 }),
    'rules.0.approvers_required',
  ],
  [
    'require_approval with no when.models',
    withRule({ ...approval, when: { models: [] } }),
    'rules.0.when.models',
  ],
  [
    'require_approval with no when.tools',
    withRule({ ...approval, when: { tools: [] } }),
    'rules.0.when.tools',
  ],
  [
    'require_approval min_estimated_cost_usd -1',
    withRule({ ...approval, when: { min_estimated_cost_usd: -1 } }),
    'rules.0.when.min_estimated_cost_usd',
  ],
  [
    'require_approval with an unknown condition',
    withRule({ ...approval, when: { agents: ['a'] } }),
    'rules.0.when',
  ],
  ['applies_to.agent_ids empty', { ...minimal, applies_to: { agent_ids: [] } }, 'applies_to.agent_ids'],
  ['applies_to.models empty', { ...minimal, applies_to: { models: [] } }, 'applies_to.models'],
  [
    'applies_to.action_types empty',
    { ...minimal, applies_to: { action_types: [] } },
    'applies_to.action_types',
  ],
  ['applies_to.tools empty', { ...minimal, applies_to: { tools: [] } }, 'applies_to.tools'],
  [
    `applies_to.agent_ids with ${MAX_LIST_ITEMS + 1} ids`,
    { ...minimal, applies_to: { agent_ids: items(MAX_LIST_ITEMS + 1) } },
    'applies_to.agent_ids',
  ],
  ['applies_to with an unknown key', { ...minimal, applies_to: { sessions: ['s'] } }, 'applies_to'],
  ['an unknown field', { ...minimal, owner: 'me' }, 'body'],
];

const cases = CASES.map(([label, body, field]) => ({ label, body, field }));

describe('bad policy bodies', () => {
  let existing: string;
  beforeAll(async () => {
    existing = (await create(minimal)).body.id;
  });

  it.each(cases)(
    'POST /v1/policies with $label -> 400 validation_error on $field',
    async ({ body, field }) => {
      const res = await app.http.post<ErrorBody>('/v1/policies', body, org.adminKey);
      expect(res.status).toBe(400);
      expect(res.body.error_code).toBe('validation_error');
      expect(res.body.details.map((d) => d.path)).toContain(field);
      expect(res.body.details.every((d) => d.message.length > 0)).toBe(true);
    },
  );

  it.each(CASES)(
    'PUT /v1/policies/{id} with %s -> 400 validation_error on %s',
    async (_label, body, field) => {
      const res = await app.http.call<ErrorBody>('PUT', `/v1/policies/${existing}`, {
        token: org.adminKey,
        body,
      });
      expect(res.status).toBe(400);
      expect(res.body.details.map((d) => d.path)).toContain(field);
    },
  );

  it('says a pattern over the length limit is too long once, not twice', async () => {
    const body = withRule({ type: 'deny_pattern', pattern: long(MAX_PATTERN_LENGTH + 1) });
    const res = await app.http.post<ErrorBody>('/v1/policies', body, org.adminKey);
    expect(res.body.details.filter((d) => d.path === 'rules.0.pattern')).toHaveLength(1);
  });

  it('accepts the bodies at each limit (the 400s come from the field changed)', async () => {
    const atLimits = {
      name: long(100),
      description: long(2000),
      priority: 1000,
      applies_to: { agent_ids: items(MAX_LIST_ITEMS) },
      rules: [
        { type: 'deny_pattern', pattern: 'a'.repeat(MAX_PATTERN_LENGTH), flags: 'ims' },
        { type: 'max_tokens', limit: 1 },
        { type: 'max_cost_per_call_usd', limit: 0.000001 },
        { ...approval, timeout_seconds: 604_800 },
        { ...approval, timeout_seconds: 1 },
        ...Array(MAX_RULES_PER_POLICY - 5).fill(minimal.rules[0]),
      ],
    };
    expect((await create(atLimits)).status).toBe(201);
    expect((await put(existing, atLimits)).status).toBe(200);
  });

  it(`refuses a policy beyond ${MAX_POLICIES_PER_ORG} in one org with 400 validation_error, and counts only live ones`, async () => {
    const fresh = await signupOrg(app.http, 'Full');
    const now = new Date();
    await app.infra.knex('policies').insert(
      Array.from({ length: MAX_POLICIES_PER_ORG - 1 }, (_, i) => ({
        id: `pol_seed${String(i).padStart(4, '0')}`,
        org_id: fresh.orgId,
        name: `seed ${i}`,
        enabled: true,
        priority: 0,
        mode: 'enforce',
        applies_to: {},
        rules: JSON.stringify([{ type: 'max_tokens', limit: 5 }]),
        version: 1,
        created_at: now,
        updated_at: now,
      })),
    );
    const last = await create(minimal, fresh.adminKey);
    expect(last.status).toBe(201);
    const versionBefore = await orgVersion(fresh.orgId);
    const over = await app.http.post<ErrorBody>('/v1/policies', minimal, fresh.adminKey);
    expect(over.status).toBe(400);
    expect(over.body.error_code).toBe('validation_error');
    expect(over.body.details[0]?.message).toContain(String(MAX_POLICIES_PER_ORG));
    expect(await orgVersion(fresh.orgId)).toBe(versionBefore);
    expect((await remove(last.body.id, fresh.adminKey)).status).toBe(204);
    expect((await create(minimal, fresh.adminKey)).status).toBe(201);
  });

  it(`refuses patterns past ${MAX_ORG_PATTERN_PROGRAM} instructions across the org's enabled policies, changing nothing`, async () => {
    const fresh = await signupOrg(app.http, 'Many patterns');
    // 1,203 instructions each: 50 of them are 60,150, two such policies past the limit.
    const rules = Array.from({ length: MAX_RULES_PER_POLICY }, (_, i) => ({
      type: 'deny_pattern',
      pattern: `(?:\\w*${String.fromCharCode(97 + (i % 26))}){400}[^\\w]`,
    }));
    const first = await create({ name: 'big one', rules }, fresh.adminKey);
    expect(first.status).toBe(201);
    const versionBefore = await orgVersion(fresh.orgId);
    const over = await app.http.post<ErrorBody>('/v1/policies', { name: 'big two', rules }, fresh.adminKey);
    expect(over.status).toBe(400);
    expect(over.body).toMatchObject({ error_code: 'validation_error', details: [{ path: 'rules' }] });
    expect(over.body.details[0]?.message).toContain(
      `120300 instructions together, more than ${MAX_ORG_PATTERN_PROGRAM}`,
    );
    expect(await orgVersion(fresh.orgId)).toBe(versionBefore);
    // Disabled, it compiles to nothing; enabling it is refused; a change that adds nothing is taken.
    const disabled = await create({ name: 'big two', rules, enabled: false }, fresh.adminKey);
    expect(disabled.status).toBe(201);
    expect((await put(disabled.body.id, { name: 'big two', rules }, fresh.adminKey)).status).toBe(400);
    expect((await put(first.body.id, { name: 'renamed', rules }, fresh.adminKey)).status).toBe(200);
    // Half the patterns off the first makes room for the second.
    const half = { name: 'renamed', rules: rules.slice(0, 25) };
    expect((await put(first.body.id, half, fresh.adminKey)).status).toBe(200);
    expect((await put(disabled.body.id, { name: 'big two', rules }, fresh.adminKey)).status).toBe(200);
  }, 60_000);

  it(`refuses list items past ${MAX_ORG_LIST_ITEMS} across the org's enabled policies, changing nothing (QA: 300 MB an org)`, async () => {
    const fresh = await signupOrg(app.http, 'Long lists');
    const names = (tag: string, n: number) => Array.from({ length: n }, (_, i) => `${tag}-${i}`);
    // 10 deny_tools rules of 500 and applies_to's 500 tools: 5,500 items, two past the limit.
    const body = (tag: string) => ({
      name: tag,
      applies_to: { tools: names(`${tag}-scope`, 500) },
      rules: Array.from({ length: 10 }, (_, r) => ({ type: 'deny_tools', tools: names(`${tag}-${r}`, 500) })),
    });
    const first = await create(body('one'), fresh.adminKey);
    expect(first.status).toBe(201);
    const versionBefore = await orgVersion(fresh.orgId);
    const over = await app.http.post<ErrorBody>('/v1/policies', body('two'), fresh.adminKey);
    expect(over.status).toBe(400);
    expect(over.body).toMatchObject({ error_code: 'validation_error', details: [{ path: 'rules' }] });
    expect(over.body.details[0]?.message).toContain(`11000 items together, more than ${MAX_ORG_LIST_ITEMS}`);
    expect(await orgVersion(fresh.orgId)).toBe(versionBefore);
    // Disabled, it holds none; enabling it is refused; a change that adds nothing is taken.
    const disabled = await create({ ...body('two'), enabled: false }, fresh.adminKey);
    expect(disabled.status).toBe(201);
    expect((await put(disabled.body.id, body('two'), fresh.adminKey)).status).toBe(400);
    expect((await put(first.body.id, { ...body('one'), name: 'renamed' }, fresh.adminKey)).status).toBe(200);
    // Shorter lists on the first make room for the second.
    const shorter = { ...body('one'), rules: body('one').rules.slice(0, 1) };
    expect((await put(first.body.id, shorter, fresh.adminKey)).status).toBe(200);
    expect((await put(disabled.body.id, body('two'), fresh.adminKey)).status).toBe(200);
    // require_approval's lists count too.
    const held = {
      name: 'held',
      rules: [{ type: 'require_approval', when: { tools: names('held', 500) }, approvers_required: 1 }],
    };
    for (let i = 0; i < 7; i++) expect((await create(held, fresh.adminKey)).status).toBe(201);
    const past = await app.http.post<ErrorBody>('/v1/policies', held, fresh.adminKey);
    expect(past.body.details[0]?.message).toContain(`10500 items together`);
  }, 60_000);

  it("compiles a policy's patterns in slices of the event loop: create, update, and the preview's set and draft", async () => {
    const fresh = await signupOrg(app.http, 'In turns');
    const unique = `${Date.now()}`;
    // 16 patterns of the largest kind (about 1.6 ms each here): about 26 ms in one piece.
    const rules = (tag: string) =>
      Array.from({ length: 16 }, (_, i) => ({
        type: i % 2 ? 'redact_pattern' : 'deny_pattern',
        pattern: `(?:\\w*a){400}[^\\w]${unique}${tag}${i}`,
        ...(i % 2 ? { replacement: '#' } : {}),
      }));
    const events: ('compile' | 'turn')[] = [];
    const original = RE2JS.compile.bind(RE2JS);
    const compile = jest.spyOn(RE2JS, 'compile').mockImplementation((pattern, flags) => {
      events.push('compile');
      return original(pattern, flags);
    });
    let ticking = true;
    const tick = () => {
      events.push('turn');
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    try {
      const created = await create({ name: 'turns', rules: rules('c') }, fresh.adminKey);
      expect(created.status).toBe(201);
      expect((await put(created.body.id, { name: 'turns', rules: rules('u') }, fresh.adminKey)).status).toBe(
        200,
      );
      const since = new Date(Date.now() - 60_000).toISOString();
      const draft = { policy: { name: 'd', rules: rules('p') }, since };
      expect((await app.http.post('/v1/policies/preview', draft, fresh.adminKey)).status).toBe(200);
    } finally {
      ticking = false;
      compile.mockRestore();
    }
    // The checks of create, update and the draft, the set's compile and the draft's: each pattern at least once.
    expect(events.filter((e) => e === 'compile').length).toBeGreaterThanOrEqual(4 * 16);
    const runs = events
      .join('')
      .split('turn')
      .map((run) => run.length / 'compile'.length);
    expect(Math.max(...runs)).toBeLessThanOrEqual(8); // never a whole policy's 16 in one piece
  });

  it("refuses a body's patterns with 429 while the org is past its share of compiling them, and charges what they took", async () => {
    const fresh = await signupOrg(app.http, 'Compiling');
    const time = app.infra.patternCheckTime;
    const heavy = (tag: string) =>
      Array.from({ length: 10 }, (_, i) => ({
        type: 'deny_pattern',
        pattern: `(?:\\w*a){400}[^\\w]${Date.now()}${tag}${i}`,
      }));
    time.charge(fresh.orgId, EVALUATION_BURST_MS); // its balance spent
    // Compiling is charged to the org (what the balance refills meanwhile depends on the machine's hour).
    const charge = jest.spyOn(time, 'charge');
    try {
      expect((await create({ name: 'first', rules: heavy('a') }, fresh.adminKey)).status).toBe(201);
      const charged = charge.mock.calls.filter(([orgId]) => orgId === fresh.orgId).map(([, ms]) => ms);
      expect(charged.reduce((sum, ms) => sum + ms, 0)).toBeGreaterThan(0);
    } finally {
      charge.mockRestore();
    }
    time.charge(fresh.orgId, 3_000); // deep in debt: 3 s at 250 ms a second past the burst
    const versionBefore = await orgVersion(fresh.orgId);
    for (const refused of [
      await create({ name: 'second', rules: heavy('b') }, fresh.adminKey),
      await app.http.post<ErrorBody>(
        '/v1/policies/preview',
        { policy: { name: 'd', rules: heavy('c') }, since: new Date(Date.now() - 60_000).toISOString() },
        fresh.adminKey,
      ),
    ]) {
      expect(refused.status).toBe(429);
      expect((refused.body as unknown as ErrorBody).error_code).toBe('rate_limited');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(12);
    }
    expect(await orgVersion(fresh.orgId)).toBe(versionBefore);
    // A body with no pattern compiles nothing, and is taken; so is another org's.
    expect((await create({ name: 'no patterns', rules: minimal.rules }, fresh.adminKey)).status).toBe(201);
    expect((await create({ name: 'other org', rules: heavy('d') })).status).toBe(201);
  });

  it("counts the org's other policies from what each write kept, compiling only the policy written", async () => {
    const fresh = await signupOrg(app.http, 'Counted');
    // 1,204 instructions each, 1,205 from the eleventh (two digits).
    const heavy = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ type: 'deny_pattern', pattern: `(?:\\w*a){400}[^\\w]${i}` }));
    const kept = async (id: string) =>
      (await app.infra.knex('policies').where({ id }).first('pattern_instructions')).pattern_instructions;
    // Kept on create and on update, disabled or not.
    const off = await create({ name: 'off', rules: heavy(2), enabled: false }, fresh.adminKey);
    expect(await kept(off.body.id)).toBe(2 * 1_204);
    expect(
      (await put(off.body.id, { name: 'off', rules: heavy(3), enabled: false }, fresh.adminKey)).status,
    ).toBe(200);
    expect(await kept(off.body.id)).toBe(3 * 1_204);
    // What is kept is what is counted: a stored policy said to hold 99,000 leaves no room for 3,612.
    const plain = await create(
      { name: 'plain', rules: [{ type: 'deny_pattern', pattern: 'x' }] },
      fresh.adminKey,
    );
    await app.infra.knex('policies').where({ id: plain.body.id }).update({ pattern_instructions: 99_000 });
    const refused = await put(off.body.id, { name: 'off', rules: heavy(3) }, fresh.adminKey);
    expect(refused.status).toBe(400);
    expect((refused.body as unknown as ErrorBody).details[0]?.message).toContain(
      '102612 instructions together',
    );
    // A policy written before the counts were kept (null) is counted from its rules.
    await app.infra
      .knex('policies')
      .where({ id: plain.body.id })
      .update({
        pattern_instructions: null,
        rules: JSON.stringify(heavy(80)),
      });
    const stillRefused = await put(off.body.id, { name: 'off', rules: heavy(3) }, fresh.adminKey);
    // 10 × 1,204 + 70 × 1,205 + 3 × 1,204.
    expect((stillRefused.body as unknown as ErrorBody).details[0]?.message).toContain(
      '100002 instructions together',
    );
  }, 30_000);
});
