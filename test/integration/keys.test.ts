import { createHash } from 'node:crypto';
import { canonicalJson } from '../../domain/canonical-json';
import { PRESETS } from '../../domain/scopes';
import { mintKey, signupOrg, type SignedUpOrg } from '../support/factories';
import { startTestApp, type TestApp } from '../support/test-app';

let app: TestApp;
let org: SignedUpOrg;

beforeAll(async () => {
  app = await startTestApp();
  org = await signupOrg(app.http);
});
afterAll(() => app.close());

describe('keys', () => {
  it('mints a key with a csk_ secret shown once, stores only a hash, default 90 days', async () => {
    const res = await app.http.post<Record<string, unknown>>(
      '/v1/keys',
      { name: 'ci', scopes: ['llm:invoke'] },
      org.adminKey,
    );
    expect(res.status).toBe(201);
    const key = res.body as {
      id: string;
      key: string;
      prefix: string;
      created_at: string;
      expires_at: string;
    };
    expect(key.key).toMatch(/^csk_[A-Za-z0-9_-]{43}$/);
    expect(key.prefix).toBe(key.key.slice(0, 12));
    expect(res.body).toMatchObject({
      name: 'ci',
      scopes: ['llm:invoke'],
      last_used_at: null,
      revoked_at: null,
    });
    const days = (Date.parse(key.expires_at) - Date.parse(key.created_at)) / 86_400_000;
    expect(days).toBe(90);
    const stored = await app.infra.knex('api_keys').where({ id: key.id }).first();
    expect(JSON.stringify(stored)).not.toContain(key.key);
    const fetched = await app.http.get(`/v1/keys/${key.id}`, org.adminKey);
    expect(fetched.status).toBe(200);
    expect(fetched.body).not.toHaveProperty('key');
  });

  it.each(Object.entries(PRESETS))(
    'expands the %s preset exactly as the contract says',
    async (preset, scopes) => {
      const key = await mintKey(app.http, org.adminKey, [preset]);
      expect([...key.scopes].sort()).toEqual([...scopes].sort());
    },
  );

  it('lists keys newest first with cursors, never with secrets', async () => {
    for (let i = 0; i < 3; i++) await mintKey(app.http, org.adminKey, ['audit:read'], `page-${i}`);
    const first = await app.http.get<{ data: { id: string; name: string }[]; next_cursor: string }>(
      '/v1/keys?limit=2',
      org.adminKey,
    );
    expect(first.status).toBe(200);
    expect(first.body.data).toHaveLength(2);
    expect(first.body.data[0]?.name).toBe('page-2');
    expect(first.body.next_cursor).toEqual(expect.any(String));
    const second = await app.http.get<{ data: { id: string }[] }>(
      `/v1/keys?limit=2&cursor=${first.body.next_cursor}`,
      org.adminKey,
    );
    expect(second.body.data[0]?.id).not.toBe(first.body.data[1]?.id);
    expect(JSON.stringify([first.body, second.body])).not.toMatch(/csk_[A-Za-z0-9_-]{43}/);
  });

  it('revokes a key so that it stops working at once; revoking twice is fine', async () => {
    const key = await mintKey(app.http, org.adminKey, ['audit:read']);
    expect((await app.http.get('/v1/audit', key.key)).status).toBe(200);
    const revoked = await app.http.delete<{ revoked_at: string }>(`/v1/keys/${key.id}`, org.adminKey);
    expect(revoked.status).toBe(200);
    expect(revoked.body.revoked_at).toEqual(expect.any(String));
    const after = await app.http.get('/v1/audit', key.key);
    expect(after.status).toBe(401);
    expect(after.body.error_code).toBe('invalid_api_key');
    expect((await app.http.delete(`/v1/keys/${key.id}`, org.adminKey)).status).toBe(200);
  });

  // A race: on the code before the fix (the clock read before the row lock) it failed 3 runs of 4.
  it('records one revocation however many race: the others change nothing and record nothing (QA)', async () => {
    const keys = await Promise.all(
      Array.from({ length: 16 }, (_, i) => mintKey(app.http, org.adminKey, ['audit:read'], `racing-${i}`)),
    );
    await Promise.all(
      keys.flatMap((k) => Array.from({ length: 5 }, () => app.http.delete(`/v1/keys/${k.id}`, org.adminKey))),
    );
    // Sealed or still in the outbox: every key.revoked entry recorded.
    const { rows: counts } = await app.infra.knex.raw<{ rows: { n: number }[] }>(
      `select resource_id, count(*)::int as n from (
         select resource_id from audit_outbox where action = 'key.revoked' and resource_id = any(?)
         union all
         select resource_id from audit_entries where action = 'key.revoked' and resource_id = any(?)
       ) e group by resource_id`,
      [keys.map((k) => k.id), keys.map((k) => k.id)],
    );
    expect(counts).toHaveLength(keys.length);
    expect(counts.every((c) => c.n === 1)).toBe(true);
  });

  it('rotates a key: same name and scopes, new secret; the old one stops at once', async () => {
    const old = await mintKey(app.http, org.adminKey, ['audit:read'], 'rotating');
    const res = await app.http.post<{ id: string; key: string; name: string; scopes: string[] }>(
      `/v1/keys/${old.id}/rotate`,
      undefined,
      org.adminKey,
    );
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: 'rotating', scopes: ['audit:read'] });
    expect(res.body.id).not.toBe(old.id);
    expect((await app.http.get('/v1/audit', res.body.key)).status).toBe(200);
    expect((await app.http.get('/v1/audit', old.key)).status).toBe(401);
  });

  it('rotates a key once however many rotations race: one new key, the others 409 invalid_state', async () => {
    const old = await mintKey(app.http, org.adminKey, ['audit:read'], 'raced');
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => app.http.post(`/v1/keys/${old.id}/rotate`, {}, org.adminKey)),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([201, ...Array<number>(9).fill(409)]);
    expect(answers.filter((a) => a.status === 409).map((a) => a.body.error_code)).toEqual(
      Array<string>(9).fill('invalid_state'),
    );
    const rows = await app.infra.knex('api_keys').where({ org_id: org.orgId, name: 'raced' });
    expect(rows).toHaveLength(2); // the old key and its one replacement
    const where = { org_id: org.orgId, action: 'key.rotated', resource_id: old.id };
    const sealed = await app.infra.knex('audit_entries').where(where);
    const waiting = await app.infra.knex('audit_outbox').where(where);
    expect(sealed.length + waiting.length).toBe(1);
  });

  it('rotates with grace: the old key works until the grace ends', async () => {
    const old = await mintKey(app.http, org.adminKey, ['audit:read']);
    const res = await app.http.post(`/v1/keys/${old.id}/rotate`, { grace_seconds: 600 }, org.adminKey);
    expect(res.status).toBe(201);
    expect((await app.http.get('/v1/audit', old.key)).status).toBe(200);
  });

  it('keeps last_used_at current without writing the key row on each request', async () => {
    const key = await mintKey(app.http, org.adminKey, ['audit:read']);
    await app.http.get('/v1/audit', key.key);
    const row = await app.infra.knex('api_keys').where({ id: key.id }).first();
    expect(row.last_used_at).toBeNull();
    const shown = await app.http.get<{ last_used_at: string | null }>(`/v1/keys/${key.id}`, org.adminKey);
    expect(shown.body.last_used_at).toEqual(expect.any(String));
    await app.infra.keyUsage.flush();
    const flushed = await app.infra.knex('api_keys').where({ id: key.id }).first();
    expect(flushed.last_used_at).not.toBeNull();
  });

  it('answers a revocation with the key as GET shows it, its last use included (before the flush)', async () => {
    const key = await mintKey(app.http, org.adminKey, ['audit:read']);
    await app.http.get('/v1/audit', key.key);
    const shown = await app.http.get<{ last_used_at: string }>(`/v1/keys/${key.id}`, org.adminKey);
    const revoked = await app.http.delete<{ last_used_at: string | null; revoked_at: string | null }>(
      `/v1/keys/${key.id}`,
      org.adminKey,
    );
    expect(revoked.body.last_used_at).toBe(shown.body.last_used_at);
    expect(revoked.body.revoked_at).toEqual(expect.any(String));
  });
});

describe('Idempotency-Key on POST /v1/keys', () => {
  const mintWith = (key: string, body: object) =>
    app.http.call<{ id: string; key: string }>('POST', '/v1/keys', {
      token: org.adminKey,
      body,
      headers: { 'Idempotency-Key': key },
    });
  const countKeys = async () => Number((await app.infra.knex('api_keys').count('* as n').first())?.n);

  it('replays the first response, secret included, and creates nothing new', async () => {
    const body = { name: 'idem', scopes: ['read'] };
    const first = await mintWith('idem-1', body);
    const before = await countKeys();
    const again = await mintWith('idem-1', body);
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await countKeys()).toBe(before);
  });

  it('answers 409 idempotency_conflict for the same key with another body', async () => {
    await mintWith('idem-2', { name: 'a', scopes: ['read'] });
    const res = await mintWith('idem-2', { name: 'b', scopes: ['read'] });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ error_code: 'idempotency_conflict' });
  });

  it('keeps nothing for a failed request, so the key can be used again', async () => {
    expect((await mintWith('idem-3', { name: 'x', scopes: ['nope'] })).status).toBe(400);
    expect((await mintWith('idem-3', { name: 'x', scopes: ['read'] })).status).toBe(201);
  });

  it('stores the replayable response sealed, never the secret in clear', async () => {
    const res = await mintWith('idem-4', { name: 'sealed', scopes: ['read'] });
    const rows = await app.infra.knex('idempotency_records').select('response');
    expect(JSON.stringify(rows)).not.toContain(res.body.key);
  });

  it('the same request sent again while the first still runs waits, and gets its response replayed', async () => {
    const body = { name: 'concurrent', scopes: ['read'] };
    const before = await countKeys();
    const all = await Promise.all(Array.from({ length: 10 }, () => mintWith('idem-6', body)));
    expect(all.map((r) => r.status)).toEqual(Array(10).fill(201));
    expect(new Set(all.map((r) => r.body.id)).size).toBe(1);
    expect(all.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(9);
    expect(await countKeys()).toBe(before + 1);
  });

  describe('a claim left by a process that died mid-request (no response stored)', () => {
    const body = { name: 'after a crash', scopes: ['read'] };
    const leftBehind = (key: string, ageSeconds: number) =>
      app.infra.knex.raw(
        `insert into idempotency_records (org_id, principal_id, key, route, request_hash, created_at, expires_at)
         values (?, ?, ?, 'POST /v1/keys', ?, now() - make_interval(secs => ?), now() + interval '1 day')`,
        [
          org.orgId,
          org.adminKeyId,
          key,
          createHash('sha256').update(canonicalJson(body)).digest('hex'),
          ageSeconds,
        ],
      );

    it('is taken over by the same request once older than the longest a request may take', async () => {
      await leftBehind('idem-7', 3600);
      const res = await mintWith('idem-7', body);
      expect(res.status).toBe(201);
      expect(res.headers.get('idempotent-replayed')).toBeNull();
      const again = await mintWith('idem-7', body);
      expect(again.body.id).toBe(res.body.id);
    });

    it('still refuses another body under the key with 409 idempotency_conflict', async () => {
      await leftBehind('idem-8', 3600);
      const res = await mintWith('idem-8', { ...body, name: 'another' });
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({ error_code: 'idempotency_conflict' });
    });
  });

  it('scopes keys per org: another org may use the same key', async () => {
    const other = await signupOrg(app.http);
    await mintWith('idem-5', { name: 'mine', scopes: ['read'] });
    const theirs = await app.http.call('POST', '/v1/keys', {
      token: other.adminKey,
      body: { name: 'theirs', scopes: ['read'] },
      headers: { 'Idempotency-Key': 'idem-5' },
    });
    expect(theirs.status).toBe(201);
    expect(theirs.body.name).toBe('theirs');
  });
});
