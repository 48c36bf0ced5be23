import { signupOrg, type SignedUpOrg } from '../support/factories';
import { startTestApp, type TestApp } from '../support/test-app';
import { validateCycloneDx16 } from '../support/cyclonedx-validator';

interface AgentBody {
  id: string;
  name: string;
  version: number;
  status: string;
  allowed_models: string[];
  credential_refs: string[];
  [field: string]: unknown;
}
interface Bom {
  serialNumber: string;
  version: number;
  metadata: { timestamp: string; component: { name: string } };
  components: { name: string; type: string }[];
  services?: { name: string }[];
}

let app: TestApp;
let org: SignedUpOrg;
let other: SignedUpOrg;
let credentialRef: string;

beforeAll(async () => {
  app = await startTestApp();
  org = await signupOrg(app.http);
  other = await signupOrg(app.http, 'Other');
  const cred = await app.http.post<{ credential_ref: string }>(
    '/v1/credentials',
    { name: 'openai', provider: 'openai', secret: 'sk-agent-test-123456789' },
    org.adminKey,
  );
  credentialRef = cred.body.credential_ref;
});
afterAll(() => app.close());

const create = (body: Record<string, unknown>, token = org.adminKey) =>
  app.http.post<AgentBody>('/v1/agents', body, token);
const patch = (id: string, body: Record<string, unknown>) =>
  app.http.call<AgentBody>('PATCH', `/v1/agents/${id}`, { token: org.adminKey, body });
const agbom = (id: string, token = org.adminKey) => app.http.get<Bom>(`/v1/agents/${id}/agbom`, token);

describe('agents', () => {
  it('creates an agent with every field, active at version 1', async () => {
    const body = {
      name: 'release-bot',
      description: 'Writes release notes',
      owner: 'platform-team',
      allowed_models: ['gpt-4o-mini', 'claude-haiku-4-5'],
      tools: [{ name: 'git', version: '2.39', description: 'reads the log' }],
      credential_refs: [credentialRef],
      metadata: { repo: 'acme/app' },
    };
    const res = await create(body);
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^agt_/),
      ...body,
      status: 'active',
      version: 1,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const got = await app.http.get<AgentBody>(`/v1/agents/${res.body.id}`, org.adminKey);
    expect(got.body).toEqual(res.body);
  });

  it('defaults optional fields to empty', async () => {
    const res = await create({ name: 'bare' });
    expect(res.body).toMatchObject({
      description: null,
      owner: null,
      allowed_models: [],
      tools: [],
      credential_refs: [],
      metadata: {},
    });
  });

  it("refuses another org's credential ref and a deleted one", async () => {
    const theirs = await app.http.post<{ credential_ref: string }>(
      '/v1/credentials',
      { name: 'x', provider: 'mock', secret: 'm' },
      other.adminKey,
    );
    const foreign = await create({ name: 'x', credential_refs: [theirs.body.credential_ref] });
    expect(foreign.status).toBe(400);
    expect(foreign.body).toMatchObject({ error_code: 'validation_error' });
    const gone = await app.http.post<{ credential_ref: string }>(
      '/v1/credentials',
      { name: 'gone', provider: 'mock', secret: 'm' },
      org.adminKey,
    );
    await app.http.delete(`/v1/credentials/${gone.body.credential_ref}`, org.adminKey);
    expect((await create({ name: 'x', credential_refs: [gone.body.credential_ref] })).status).toBe(400);
  });

  it('bumps version on each patch that changes something, not on one that changes nothing', async () => {
    const { body: agent } = await create({ name: 'patchy', allowed_models: ['gpt-4o'] });
    const renamed = await patch(agent.id, { name: 'patchy-2' });
    expect(renamed.body).toMatchObject({ name: 'patchy-2', version: 2, allowed_models: ['gpt-4o'] });
    const same = await patch(agent.id, { name: 'patchy-2' });
    expect(same.body.version).toBe(2);
    await patch(agent.id, { metadata: { a: 1, zone: 'eu' } });
    // jsonb hands the object back as {a, zone}; the same keys in another order are no change.
    const reordered = await patch(agent.id, { metadata: { zone: 'eu', a: 1 } });
    expect(reordered.body.version).toBe(3);
    const models = await patch(agent.id, {
      allowed_models: [],
      description: 'now with nothing',
      owner: null,
    });
    expect(models.body).toMatchObject({ version: 4, allowed_models: [], description: 'now with nothing' });
    expect(Date.parse(models.body.updated_at as string)).toBeGreaterThanOrEqual(
      Date.parse(agent.updated_at as string),
    );
  });

  it('gives concurrent patches each their own version', async () => {
    const { body: agent } = await create({ name: 'race' });
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => patch(agent.id, { description: `edit ${i}` })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(8).fill(200));
    expect(results.map((r) => r.body.version).sort((a, b) => a - b)).toEqual([2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('suspends and resumes; doing either twice is 409 invalid_state', async () => {
    const { body: agent } = await create({ name: 'sleepy' });
    const suspended = await app.http.post<AgentBody>(
      `/v1/agents/${agent.id}/suspend`,
      undefined,
      org.adminKey,
    );
    expect(suspended.body).toMatchObject({ status: 'suspended', version: 2 });
    const again = await app.http.post(`/v1/agents/${agent.id}/suspend`, undefined, org.adminKey);
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error_code: 'invalid_state', status: 'suspended' });
    const resumed = await app.http.post<AgentBody>(`/v1/agents/${agent.id}/resume`, undefined, org.adminKey);
    expect(resumed.body).toMatchObject({ status: 'active', version: 3 });
    expect((await app.http.post(`/v1/agents/${agent.id}/resume`, undefined, org.adminKey)).status).toBe(409);
  });

  it('writes an audit entry for every change', async () => {
    const { body: agent } = await create({ name: 'audited' });
    await patch(agent.id, { owner: 'someone' });
    await app.http.post(`/v1/agents/${agent.id}/suspend`, undefined, org.adminKey);
    await app.http.post(`/v1/agents/${agent.id}/resume`, undefined, org.adminKey);
    const audit = await app.http.get<{ data: { action: string; details: Record<string, unknown> }[] }>(
      `/v1/audit?resource_id=${agent.id}`,
      org.adminKey,
    );
    expect(audit.body.data.map((e) => e.action)).toEqual([
      'agent.resumed',
      'agent.suspended',
      'agent.updated',
      'agent.created',
    ]);
    expect(audit.body.data[2]?.details).toMatchObject({ changed: ['owner'], version: 2 });
  });

  it('lists newest first with cursors and hides other orgs', async () => {
    const a = await create({ name: 'list-a' });
    const b = await create({ name: 'list-b' });
    const page = await app.http.get<{ data: AgentBody[]; next_cursor: string }>(
      '/v1/agents?limit=1',
      org.adminKey,
    );
    expect(page.body.data[0]?.id).toBe(b.body.id);
    const next = await app.http.get<{ data: AgentBody[] }>(
      `/v1/agents?limit=1&cursor=${page.body.next_cursor}`,
      org.adminKey,
    );
    expect(next.body.data[0]?.id).toBe(a.body.id);
    const theirs = await app.http.get<{ data: AgentBody[] }>('/v1/agents?limit=100', other.adminKey);
    expect(theirs.body.data).toEqual([]);
  });

  it("answers 404 for another org's agent on every route", async () => {
    const { body: agent } = await create({ name: 'private' });
    const path = `/v1/agents/${agent.id}`;
    const token = other.adminKey;
    expect((await app.http.get(path, token)).status).toBe(404);
    expect((await app.http.call('PATCH', path, { token, body: { name: 'x' } })).status).toBe(404);
    expect((await app.http.post(`${path}/suspend`, undefined, token)).status).toBe(404);
    expect((await app.http.post(`${path}/resume`, undefined, token)).status).toBe(404);
    expect((await agbom(agent.id, token)).status).toBe(404);
  });
});

describe('AGBOM', () => {
  it('is a CycloneDX 1.6 document that validates against the official schema', async () => {
    const { body: agent } = await create({
      name: 'bom-bot',
      owner: 'sec-team',
      allowed_models: ['gpt-4o', 'claude-sonnet-4-5'],
      tools: [{ name: 'search', version: '1.0' }, { name: 'shell' }],
      credential_refs: [credentialRef],
      metadata: { env: 'prod' },
    });
    const res = await agbom(agent.id);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/vnd.cyclonedx+json');
    expect(validateCycloneDx16(res.body)).toEqual([]);
    expect(res.body).toMatchObject({ bomFormat: 'CycloneDX', specVersion: '1.6', version: 1 });
    expect(res.body.metadata.component.name).toBe('bom-bot');
    const models = res.body.components.filter((c) => c.type === 'machine-learning-model').map((c) => c.name);
    expect(models.sort()).toEqual(['claude-sonnet-4-5', 'gpt-4o']);
    expect(JSON.stringify(res.body)).toContain(credentialRef);
    expect(JSON.stringify(res.body)).not.toContain('sk-agent-test');
  });

  it('keeps its serial and version while nothing changes, and changes them exactly when the BOM does', async () => {
    const { body: agent } = await create({ name: 'serial', allowed_models: ['gpt-4o'] });
    const first = (await agbom(agent.id)).body;
    const again = (await agbom(agent.id)).body;
    expect(again).toEqual(first);

    // A patch that changes nothing leaves the BOM as it was.
    await patch(agent.id, { allowed_models: ['gpt-4o'] });
    expect((await agbom(agent.id)).body).toEqual(first);

    await patch(agent.id, { allowed_models: ['gpt-4o', 'o3'] });
    const second = (await agbom(agent.id)).body;
    expect(second.serialNumber).not.toBe(first.serialNumber);
    expect(second.version).toBe(first.version + 1);
    expect((await agbom(agent.id)).body.serialNumber).toBe(second.serialNumber);

    // Concurrent readers of the same new content bump the version once.
    await patch(agent.id, { tools: [{ name: 'browser' }] });
    const readers = await Promise.all(Array.from({ length: 6 }, () => agbom(agent.id)));
    expect(new Set(readers.map((r) => r.body.version))).toEqual(new Set([second.version + 1]));
    expect(new Set(readers.map((r) => r.body.serialNumber)).size).toBe(1);
  });

  it('lists the enabled policies that apply to the agent, and not the others', async () => {
    const { body: agent } = await create({ name: 'governed' });
    const { body: bystander } = await create({ name: 'bystander' });
    const policy = async (name: string, extra: Record<string, unknown>) => {
      const res = await app.http.post<{ id: string }>(
        '/v1/policies',
        { name, rules: [{ type: 'max_tokens', limit: 64 }], ...extra },
        org.adminKey,
      );
      expect(res.status).toBe(201);
      return res.body.id;
    };
    const everyone = await policy('for everyone', {});
    const mine = await policy('for this agent', { applies_to: { agent_ids: [bystander.id, agent.id] } });
    const trial = await policy('on trial', { mode: 'shadow', applies_to: { agent_ids: [agent.id] } });
    const theirs = await policy('for the bystander', { applies_to: { agent_ids: [bystander.id] } });
    const disabled = await policy('switched off', { enabled: false });
    const before = await agbom(agent.id);
    expect(validateCycloneDx16(before.body)).toEqual([]);
    const listed = before.body.components.filter((c) => c.type === 'data');
    expect(listed.map((c) => c.name).sort()).toEqual(['for everyone', 'for this agent', 'on trial']);
    const text = JSON.stringify(before.body);
    for (const id of [everyone, mine, trial]) expect(text).toContain(id);
    for (const id of [theirs, disabled]) expect(text).not.toContain(id);
    expect(text).toMatch(/cp:policy:mode"?,"value":"shadow"/);

    // A change to an applying policy is a change of the BOM; deleting it takes it out.
    await app.http.delete(`/v1/policies/${mine}`, org.adminKey);
    const after = (await agbom(agent.id)).body;
    expect(after.serialNumber).not.toBe(before.body.serialNumber);
    expect(JSON.stringify(after)).not.toContain(mine);
    // Another org's policies never appear.
    await app.http.post(
      '/v1/policies',
      { name: 'foreign', rules: [{ type: 'max_tokens', limit: 1 }] },
      other.adminKey,
    );
    expect(JSON.stringify((await agbom(agent.id)).body)).not.toContain('foreign');
  });

  it('shows a deleted credential as deleted, and that changes the BOM', async () => {
    const cred = await app.http.post<{ credential_ref: string }>(
      '/v1/credentials',
      { name: 'temp', provider: 'anthropic', secret: 'sk-ant-temp-123456789' },
      org.adminKey,
    );
    const ref = cred.body.credential_ref;
    const { body: agent } = await create({ name: 'cred-user', credential_refs: [ref] });
    const before = (await agbom(agent.id)).body;
    await app.http.delete(`/v1/credentials/${ref}`, org.adminKey);
    const after = (await agbom(agent.id)).body;
    expect(after.serialNumber).not.toBe(before.serialNumber);
    expect(validateCycloneDx16(after)).toEqual([]);
    expect(JSON.stringify(after)).toContain(ref);
    expect(JSON.stringify(after)).toMatch(/cp:credential:deleted"?,"value":"true"/);
  });
});
