import { randomBytes } from 'node:crypto';
import { openCredential } from '../../domain/credentials/credential-use-cases';
import { signupOrg, type SignedUpOrg } from '../support/factories';
import { startTestApp, type TestApp } from '../support/test-app';

interface CredentialBody {
  credential_ref: string;
  name: string;
  provider: string;
  base_url: string | null;
  secret_hint: string;
  version: number;
  created_at: string;
  rotated_at: string | null;
}

let app: TestApp;
let org: SignedUpOrg;
let other: SignedUpOrg;
const seen: unknown[] = [];
const newSecret = () => `sk-test-${randomBytes(18).toString('base64url')}`;

beforeAll(async () => {
  app = await startTestApp({ captureLogs: true });
  org = await signupOrg(app.http);
  other = await signupOrg(app.http, 'Other');
});
afterAll(() => app.close());

async function store(body: Record<string, unknown>, token = org.adminKey) {
  const res = await app.http.post<CredentialBody>('/v1/credentials', body, token);
  seen.push(res.body);
  return res;
}

const opened = (ref: string, orgId = org.orgId) =>
  openCredential({ uow: app.infra.uow, sealer: app.infra.credentialSealer }, orgId, ref);

describe('credentials', () => {
  it('stores a secret sealed at rest and answers with a hint of its last 4 characters only', async () => {
    const secret = newSecret();
    const res = await store({ name: 'openai prod', provider: 'openai', secret });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      credential_ref: expect.stringMatching(/^cred_/),
      name: 'openai prod',
      provider: 'openai',
      base_url: null,
      secret_hint: `…${secret.slice(-4)}`,
      version: 1,
      created_at: expect.any(String),
      rotated_at: null,
    });
    const row = await app.infra.knex('credentials').where({ ref: res.body.credential_ref }).first();
    expect(JSON.stringify(row)).not.toContain(secret);
    expect(row.key_id).toBe(app.infra.keyring.current.id);
    expect((await opened(res.body.credential_ref)).secret).toBe(secret);
  });

  it('shows no characters of a short secret', async () => {
    const res = await store({ name: 'mock', provider: 'mock', secret: 'abc1234' });
    expect(res.body.secret_hint).toBe('…');
    const eight = await store({ name: 'mock', provider: 'mock', secret: 'abcd5678' });
    expect(eight.body.secret_hint).toBe('…5678');
  });

  it('refuses to open a tampered ciphertext, or one moved to another row or org', async () => {
    const a = await store({ name: 'a', provider: 'openai', secret: newSecret() });
    const b = await store({ name: 'b', provider: 'openai', secret: newSecret() });
    const foreign = await store({ name: 'c', provider: 'openai', secret: newSecret() }, other.adminKey);
    const rowA = await app.infra.knex('credentials').where({ ref: a.body.credential_ref }).first();

    const raw = Buffer.from(rowA.sealed_secret, 'base64');
    raw[raw.length - 1] = (raw[raw.length - 1] ?? 0) ^ 1;
    await app.infra
      .knex('credentials')
      .where({ ref: b.body.credential_ref })
      .update({ sealed_secret: raw.toString('base64') });
    await expect(opened(b.body.credential_ref)).rejects.toThrow();

    // The intact ciphertext of A copied onto B (same org) and onto another org's row.
    await app.infra
      .knex('credentials')
      .where({ ref: b.body.credential_ref })
      .update({ sealed_secret: rowA.sealed_secret });
    await expect(opened(b.body.credential_ref)).rejects.toThrow();
    await app.infra
      .knex('credentials')
      .where({ ref: foreign.body.credential_ref })
      .update({ sealed_secret: rowA.sealed_secret });
    await expect(opened(foreign.body.credential_ref, other.orgId)).rejects.toThrow();
    await expect(opened(a.body.credential_ref, other.orgId)).rejects.toThrow();
  });

  it('lists (newest first, with cursors), gets and rotates; version goes up and the new secret is used', async () => {
    const first = await store({ name: 'list-1', provider: 'anthropic', secret: newSecret() });
    const second = await store({ name: 'list-2', provider: 'anthropic', secret: newSecret() });
    const page = await app.http.get<{ data: CredentialBody[]; next_cursor: string }>(
      '/v1/credentials?limit=1',
      org.adminKey,
    );
    expect(page.body.data.map((c) => c.credential_ref)).toEqual([second.body.credential_ref]);
    const next = await app.http.get<{ data: CredentialBody[] }>(
      `/v1/credentials?limit=1&cursor=${page.body.next_cursor}`,
      org.adminKey,
    );
    expect(next.body.data.map((c) => c.credential_ref)).toEqual([first.body.credential_ref]);
    seen.push(page.body, next.body);

    const ref = first.body.credential_ref;
    const secret = newSecret();
    const rotated = await app.http.post<CredentialBody>(
      `/v1/credentials/${ref}/rotate`,
      { secret },
      org.adminKey,
    );
    seen.push(rotated.body);
    expect(rotated.status).toBe(200);
    expect(rotated.body).toMatchObject({
      credential_ref: ref,
      version: 2,
      secret_hint: `…${secret.slice(-4)}`,
    });
    expect(rotated.body.rotated_at).not.toBeNull();
    expect((await opened(ref)).secret).toBe(secret);
    const got = await app.http.get<CredentialBody>(`/v1/credentials/${ref}`, org.adminKey);
    expect(got.body).toEqual(rotated.body);
  });

  it('deletes at once: the secret is destroyed, the ref is gone from the API, its history stays', async () => {
    const created = await store({ name: 'to-delete', provider: 'openai', secret: newSecret() });
    const ref = created.body.credential_ref;
    const del = await app.http.delete(`/v1/credentials/${ref}`, org.adminKey);
    expect(del.status).toBe(204);
    expect((await app.http.get(`/v1/credentials/${ref}`, org.adminKey)).status).toBe(404);
    expect((await app.http.delete(`/v1/credentials/${ref}`, org.adminKey)).status).toBe(404);
    expect(
      (await app.http.post(`/v1/credentials/${ref}/rotate`, { secret: 'sk-x' }, org.adminKey)).status,
    ).toBe(404);
    const list = await app.http.get<{ data: CredentialBody[] }>('/v1/credentials?limit=100', org.adminKey);
    expect(list.body.data.map((c) => c.credential_ref)).not.toContain(ref);
    await expect(opened(ref)).rejects.toThrow('credential_not_found');

    const row = await app.infra.knex('credentials').where({ ref }).first();
    expect(row).toMatchObject({ sealed_secret: null, name: 'to-delete' });
    expect(row.deleted_at).not.toBeNull();
    const history = await app.http.get<{ data: { action: string; actor: { id: string } }[] }>(
      `/v1/audit?resource_id=${ref}`,
      org.adminKey,
    );
    expect(history.body.data.map((e) => e.action)).toEqual(['credential.deleted', 'credential.stored']);
    expect(history.body.data.every((e) => e.actor.id === org.adminKeyId)).toBe(true);
  });

  it("answers 404 for another org's credential on every route", async () => {
    const mine = await store({ name: 'mine', provider: 'openai', secret: newSecret() });
    const ref = mine.body.credential_ref;
    expect((await app.http.get(`/v1/credentials/${ref}`, other.adminKey)).status).toBe(404);
    expect(
      (await app.http.post(`/v1/credentials/${ref}/rotate`, { secret: 'sk-x' }, other.adminKey)).status,
    ).toBe(404);
    expect((await app.http.delete(`/v1/credentials/${ref}`, other.adminKey)).status).toBe(404);
    const theirs = await app.http.get<{ data: CredentialBody[] }>(
      '/v1/credentials?limit=100',
      other.adminKey,
    );
    expect(theirs.body.data.map((c) => c.credential_ref)).not.toContain(ref);
    expect((await opened(ref)).credential.ref).toBe(ref);
  });

  it('replays a store sent again with the same Idempotency-Key, and refuses another body under it', async () => {
    const body = { name: 'idem', provider: 'openai', secret: newSecret() };
    const headers = { 'idempotency-key': `idem-${randomBytes(4).toString('hex')}` };
    const a = await app.http.call<CredentialBody>('POST', '/v1/credentials', {
      token: org.adminKey,
      body,
      headers,
    });
    const b = await app.http.call<CredentialBody>('POST', '/v1/credentials', {
      token: org.adminKey,
      body,
      headers,
    });
    expect(a.status).toBe(201);
    expect(b.body.credential_ref).toBe(a.body.credential_ref);
    expect(await app.infra.knex('credentials').where({ name: 'idem' }).count()).toEqual([{ count: '1' }]);
    const changed = { ...body, name: 'idem-2' };
    const c = await app.http.call('POST', '/v1/credentials', { token: org.adminKey, body: changed, headers });
    expect(c.status).toBe(409);
    expect(c.body.error_code).toBe('idempotency_conflict');
  });

  it('checks the base_url of each provider', async () => {
    const compatible = await store({
      name: 'vllm',
      provider: 'openai_compatible',
      secret: newSecret(),
      base_url: 'https://llm.example.com/v1',
    });
    expect(compatible.status).toBe(201);
    expect(compatible.body.base_url).toBe('https://llm.example.com/v1');
    const mockWithUrl = await store({
      name: 'm',
      provider: 'mock',
      secret: 'x',
      base_url: 'https://a.example',
    });
    expect(mockWithUrl.status).toBe(400);
    // Stored as it is called (QA: fullwidth letters and upper case were shown as typed).
    const typed = await store({
      name: 't',
      provider: 'openai',
      secret: newSecret(),
      base_url: 'HTTPS://ＬＬＭ.Example.com/v1',
    });
    expect(typed.body.base_url).toBe('https://llm.example.com/v1');
    // "" is no URL: stored, it made every call of the credential fail (QA).
    for (const provider of ['openai', 'anthropic', 'mock']) {
      const empty = await store({ name: 'e', provider, secret: newSecret(), base_url: '' });
      expect(empty.status).toBe(400);
      expect(empty.body).toMatchObject({ error_code: 'validation_error', details: [{ path: 'base_url' }] });
    }
  });

  it('accepts a loopback base_url only when the operator allows private provider hosts', async () => {
    const body = {
      name: 'ollama',
      provider: 'openai_compatible',
      secret: 'ollama',
      base_url: 'http://127.0.0.1:11434/v1',
    };
    const refused = await store(body);
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ error_code: 'validation_error', details: [{ path: 'base_url' }] });
    const allowing = await startTestApp({ env: { CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true' } });
    try {
      const admin = (await signupOrg(allowing.http)).adminKey;
      const res = await allowing.http.post<CredentialBody>('/v1/credentials', body, admin);
      expect(res.status).toBe(201);
      expect(res.body.base_url).toBe('http://127.0.0.1:11434/v1');
    } finally {
      await allowing.close();
    }
  });

  it.each([
    ['IPv4-mapped (hex)', 'https://[::ffff:7f00:1]/v1'],
    ['IPv4-mapped (dotted)', 'https://[::ffff:169.254.169.254]/v1'],
    ['IPv4-compatible', 'https://[::10.0.0.1]/v1'],
    ['NAT64', 'https://[64:ff9b::169.254.169.254]/v1'],
    ['6to4', 'https://[2002:c0a8:101::1]/v1'],
    ['site-local', 'https://[fec0::1]/v1'],
  ])('refuses a base_url at a private address spelled as %s IPv6 (%s)', async (_form, baseUrl) => {
    const res = await store({
      name: 'ssrf',
      provider: 'openai_compatible',
      secret: newSecret(),
      base_url: baseUrl,
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      error_code: 'validation_error',
      details: [{ path: 'base_url', message: expect.stringMatching(/CP_ALLOW_PRIVATE_PROVIDER_HOSTS/) }],
    });
  });

  it('never lets a secret reach a response, a log line or an audit entry', async () => {
    const secrets = (
      await app.infra.knex('credentials').whereNotNull('sealed_secret').select('ref', 'org_id')
    ).length;
    expect(secrets).toBeGreaterThan(3);
    const audit = await app.infra.knex('audit_outbox').select('details');
    const sealed = await app.infra.knex('audit_entries').select('details');
    await app.infra.auditLog.seal(org.orgId);
    const haystack = [
      JSON.stringify(seen),
      app.logs.join('\n'),
      JSON.stringify(audit),
      JSON.stringify(sealed),
    ].join('\n');
    expect(app.logs.length).toBeGreaterThan(10);
    expect(haystack).not.toMatch(/sk-test-[A-Za-z0-9_-]{10,}/);
  });
});

describe('concurrent changes to one credential', () => {
  it('give each rotation its own version, and never revive a deleted secret', async () => {
    const created = await store({ name: 'busy', provider: 'openai', secret: newSecret() });
    const ref = created.body.credential_ref;
    const rotations = await Promise.all(
      Array.from({ length: 6 }, () =>
        app.http.post<CredentialBody>(`/v1/credentials/${ref}/rotate`, { secret: newSecret() }, org.adminKey),
      ),
    );
    expect(rotations.map((r) => r.body.version).sort()).toEqual([2, 3, 4, 5, 6, 7]);

    const racing = await Promise.all([
      app.http.delete(`/v1/credentials/${ref}`, org.adminKey),
      ...Array.from({ length: 4 }, () =>
        app.http.post(`/v1/credentials/${ref}/rotate`, { secret: newSecret() }, org.adminKey),
      ),
    ]);
    expect(racing.every((r) => [200, 204, 404].includes(r.status))).toBe(true);
    const row = await app.infra.knex('credentials').where({ ref }).first();
    expect(row).toMatchObject({ sealed_secret: null });
    expect(row.deleted_at).not.toBeNull();
  });
});
