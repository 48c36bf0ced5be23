import { mintKey, PASSWORD, signupOrg, type SignedUpOrg } from '../support/factories';
import { superuserQuery } from '../support/test-db';
import { forgedChain } from '../support/audit-forgery';
import { startTestApp, type TestApp } from '../support/test-app';

interface Entry {
  id: string;
  seq: number;
  action: string;
  actor: { type: string; id: string };
  resource: { type: string; id: string };
  details: Record<string, unknown>;
  request_id: string | null;
  prev_hash: string;
  hash: string;
}
interface AuditPage {
  data: Entry[];
  next_cursor: string | null;
}

let app: TestApp;

beforeAll(async () => {
  app = await startTestApp({ captureLogs: true });
});
afterAll(() => app.close());

const readAll = async (token: string, query = ''): Promise<Entry[]> => {
  const entries: Entry[] = [];
  let cursor: string | null = null;
  do {
    const sep = query ? '&' : '';
    const path: string = `/v1/audit?limit=100${sep}${query}${cursor ? `&cursor=${cursor}` : ''}`;
    const res = await app.http.get<AuditPage>(path, token);
    expect(res.status).toBe(200);
    entries.push(...res.body.data);
    cursor = res.body.next_cursor;
  } while (cursor);
  return entries;
};

describe('audit entries for every state change', () => {
  let org: SignedUpOrg;
  const secrets: string[] = [];

  beforeAll(async () => {
    org = await signupOrg(app.http);
    secrets.push(org.adminKey, org.sessionToken);
    const key = await mintKey(app.http, org.adminKey, ['audit:read']);
    const rotated = await app.http.post<{ id: string; key: string }>(
      `/v1/keys/${key.id}/rotate`,
      undefined,
      org.adminKey,
    );
    await app.http.delete(`/v1/keys/${rotated.body.id}`, org.adminKey);
    const inv = await app.http.post<{ invite_token: string }>(
      '/v1/orgs/invites',
      { email: 'joiner@example.test', role: 'viewer' },
      org.adminKey,
    );
    await app.http.post('/v1/auth/signup', {
      email: 'joiner@example.test',
      password: PASSWORD,
      invite_token: inv.body.invite_token,
    });
    await app.http.post('/v1/auth/login', { email: org.email, password: 'wrong password, twelve+' });
    const login = await app.http.post<{ session_token: string }>('/v1/auth/login', {
      email: org.email,
      password: PASSWORD,
    });
    await app.http.post('/v1/auth/logout', undefined, login.body.session_token);
    secrets.push(key.key, rotated.body.key, inv.body.invite_token, login.body.session_token);
  });

  it('records each change with actor, resource and request id', async () => {
    const entries = await readAll(org.adminKey);
    const actions = entries.map((e) => e.action).reverse();
    expect(actions).toEqual([
      'org.created',
      'user.signed_up',
      'key.created',
      'key.created',
      'key.created',
      'key.rotated',
      'key.revoked',
      'invite.created',
      'user.signed_up',
      'auth.login_failed',
      'auth.login',
      'auth.logout',
    ]);
    const revoked = entries.find((e) => e.action === 'key.revoked');
    expect(revoked?.actor).toEqual({ type: 'api_key', id: org.adminKeyId });
    // The key a rotation made has an entry of its own, under its id (QA: only the old key's).
    const rotated = entries.find((e) => e.action === 'key.rotated');
    const made = entries.find((e) => e.action === 'key.created' && e.details.rotated_from !== undefined);
    expect(made?.resource).toEqual({ type: 'api_key', id: rotated?.details.new_key_id });
    expect(made?.details).toMatchObject({
      rotated_from: rotated?.resource.id,
      prefix: expect.stringMatching(/^csk_/),
      expires_at: expect.any(String),
    });
    expect(made?.details.prefix).not.toBe(rotated?.details.prefix);
    expect(revoked?.resource.id).toBe(made?.resource.id);
    expect(revoked?.resource.type).toBe('api_key');
    expect(revoked?.request_id).toMatch(/^req_/);
  });

  it('names a failed login by its target account as resource, never as actor: whoever sent it is not signed in', async () => {
    const entries = await readAll(org.adminKey);
    const failed = entries.find((e) => e.action === 'auth.login_failed');
    const login = entries.find((e) => e.action === 'auth.login');
    expect(login?.actor.type).toBe('user');
    expect(failed).toMatchObject({
      actor: { type: 'system', id: 'anonymous' },
      resource: { type: 'user', id: login?.actor.id },
      outcome: 'failure',
    });
    const byUser = await readAll(org.adminKey, `actor_id=${login?.actor.id}`);
    expect(byUser.map((e) => e.action)).not.toContain('auth.login_failed');
  });

  it('never contains a secret or password, in entries or in log lines', async () => {
    const entries = JSON.stringify(await readAll(org.adminKey));
    const logs = app.logs.join('\n');
    for (const secret of [...secrets, PASSWORD]) {
      expect(entries).not.toContain(secret);
      expect(logs).not.toContain(secret);
    }
  });

  it('chains entries with a gapless seq and verifies', async () => {
    const entries = (await readAll(org.adminKey)).reverse();
    entries.forEach((e, i) => {
      expect(e.seq).toBe(i + 1);
      if (i > 0) expect(e.prev_hash).toBe(entries[i - 1]?.hash);
    });
    const verify = await app.http.get('/v1/audit/verify', org.adminKey);
    expect(verify.body).toEqual({
      valid: true,
      entries_checked: entries.length,
      head: { seq: entries.length, hash: entries.at(-1)?.hash },
      first_broken_seq: null,
    });
  });

  it('filters by action, actor and resource, and pages with cursors', async () => {
    expect((await readAll(org.adminKey, 'action=key.created')).every((e) => e.action === 'key.created')).toBe(
      true,
    );
    const byActor = await readAll(org.adminKey, `actor_id=${org.adminKeyId}`);
    expect(byActor.length).toBeGreaterThan(0);
    expect(byActor.every((e) => e.actor.id === org.adminKeyId)).toBe(true);
    const byResource = await readAll(org.adminKey, `resource_id=${org.orgId}`);
    expect(byResource.map((e) => e.action)).toEqual(['org.created']);
    const page = await app.http.get<AuditPage>('/v1/audit?limit=3', org.adminKey);
    const next = await app.http.get<AuditPage>(
      `/v1/audit?limit=3&cursor=${page.body.next_cursor}`,
      org.adminKey,
    );
    expect(next.body.data[0]?.seq).toBe((page.body.data[2]?.seq ?? 0) - 1);
    const future = await app.http.get<AuditPage>('/v1/audit?since=2999-01-01T00:00:00Z', org.adminKey);
    expect(future.body.data).toEqual([]);
  });
});

/** Changes sealed entries the way a superuser could: with the append-only trigger switched off. */
const tamper = (sql: string) =>
  superuserQuery(
    app.db.url,
    `begin; alter table audit_entries disable trigger user; ${sql} alter table audit_entries enable trigger user; commit;`,
  );

describe('tamper evidence', () => {
  it('reports the first broken seq when a row is changed behind the API', async () => {
    const org = await signupOrg(app.http);
    for (let i = 0; i < 3; i++) await mintKey(app.http, org.adminKey, ['audit:read']);
    expect((await app.http.get('/v1/audit/verify', org.adminKey)).body.valid).toBe(true);
    await tamper(
      `update audit_entries set details = '{"name":"forged"}' where org_id = '${org.orgId}' and seq = 4;`,
    );
    const verify = await app.http.get('/v1/audit/verify', org.adminKey);
    expect(verify.body).toMatchObject({ valid: false, first_broken_seq: 4 });
  });

  it('reports a deleted entry as a break at the seq after the gap', async () => {
    const org = await signupOrg(app.http);
    await mintKey(app.http, org.adminKey, ['audit:read']);
    await app.http.get('/v1/audit', org.adminKey);
    await tamper(`delete from audit_entries where org_id = '${org.orgId}' and seq = 2;`);
    const verify = await app.http.get('/v1/audit/verify', org.adminKey);
    expect(verify.body).toMatchObject({ valid: false, first_broken_seq: 3 });
  });

  it('finds a rewrite of the whole chain through the signed checkpoints', async () => {
    const org = await signupOrg(app.http);
    await mintKey(app.http, org.adminKey, ['audit:read']);
    await app.http.get('/v1/audit', org.adminKey);
    // Someone with database access forges entry 2 and recomputes every hash after it.
    const forged = await forgedChain(app.infra.knex, org.orgId);
    const sql = forged
      .map(
        (e) =>
          `update audit_entries set details = '${JSON.stringify(e.details)}', prev_hash = '${e.prevHash}', hash = '${e.hash}' where org_id = '${org.orgId}' and seq = ${e.seq};`,
      )
      .join('\n');
    await tamper(sql);
    const verify = await app.http.get('/v1/audit/verify', org.adminKey);
    expect(verify.body).toMatchObject({ valid: false });
    expect(verify.body.first_broken_seq).toBeLessThanOrEqual(forged.length);
  });

  it.each([
    'update audit_entries set action = $$x$$',
    'delete from audit_entries',
    'truncate audit_entries',
    'delete from audit_checkpoints',
  ])('the database refuses: %s', async (sql) => {
    await expect(superuserQuery(app.db.url, sql)).rejects.toThrow(/append-only/);
  });
});

describe('many writers', () => {
  it('keeps one gapless chain per org under concurrent changes', async () => {
    const org = await signupOrg(app.http);
    await Promise.all(
      Array.from({ length: 40 }, (_, i) => mintKey(app.http, org.adminKey, ['audit:read'], `k${i}`)),
    );
    // Sealing from two places at once (the background job and a reader) must not fork the chain.
    await Promise.all([
      app.infra.auditLog.sealAll(),
      app.infra.auditLog.seal(org.orgId),
      app.infra.auditLog.seal(org.orgId),
    ]);
    const verify = await app.http.get('/v1/audit/verify', org.adminKey);
    expect(verify.body).toMatchObject({ valid: true, entries_checked: 43, head: { seq: 43 } });
  });
});

describe('a backlog', () => {
  it('is sealed as one gapless chain across the slices it is hashed and written in', async () => {
    const org = await signupOrg(app.http);
    const events = Array.from({ length: 130 }, (_, i) => ({
      id: `evt_backlog_${String(i).padStart(3, '0')}`,
      org_id: org.orgId,
      at: new Date(),
      actor_type: 'system',
      actor_id: 'system',
      action: 'backlog.probe',
      resource_type: 'probe',
      resource_id: `probe_${i}`,
      outcome: 'success',
      details: JSON.stringify({ i }),
    }));
    await app.infra.knex('audit_outbox').insert(events);
    expect(await app.infra.auditLog.seal(org.orgId)).toBe(133);
    const verify = await app.http.get('/v1/audit/verify', org.adminKey);
    expect(verify.body).toMatchObject({ valid: true, entries_checked: 133, head: { seq: 133 } });
    // In the order they were written, one after the other in the chain (the list is newest first).
    const probes = (await readAll(org.adminKey)).filter((e) => e.action === 'backlog.probe').reverse();
    expect(probes.map((e) => e.details.i)).toEqual([...Array(130).keys()]);
    expect(probes.map((e) => e.seq)).toEqual(Array.from({ length: 130 }, (_, i) => i + 4));
  });
});

describe('a seal that cannot move every event it hashed', () => {
  it('writes nothing of the batch, and the next seal chains all of it', async () => {
    const org = await signupOrg(app.http);
    await app.infra.auditLog.seal(org.orgId);
    const sealed = () =>
      app.infra.knex('audit_entries').where({ org_id: org.orgId }).count<{ count: string }[]>();
    const before = Number((await sealed())[0]?.count);
    // An outbox row that refuses to leave, as if another writer took it under the head lock.
    await superuserQuery(
      app.db.url,
      `create function keep_stuck_event() returns trigger language plpgsql as $$ begin return null; end $$;
       create trigger keep_stuck_event before delete on audit_outbox
         for each row when (old.id = 'evt_stuck') execute function keep_stuck_event()`,
    );
    try {
      const event = (id: string) => ({
        id,
        org_id: org.orgId,
        at: new Date(),
        actor_type: 'system',
        actor_id: 'system',
        action: 'stuck.probe',
        resource_type: 'probe',
        resource_id: id,
        outcome: 'success',
        details: JSON.stringify({ id }),
      });
      await app.infra
        .knex('audit_outbox')
        .insert([event('evt_before'), event('evt_stuck'), event('evt_after')]);
      await expect(app.infra.auditLog.seal(org.orgId)).rejects.toThrow(/outbox changed/);
      expect(Number((await sealed())[0]?.count)).toBe(before);
      const waiting = await app.infra.knex('audit_outbox').where({ org_id: org.orgId }).pluck('id');
      expect(waiting.sort()).toEqual(['evt_after', 'evt_before', 'evt_stuck']);
    } finally {
      await superuserQuery(
        app.db.url,
        'drop trigger keep_stuck_event on audit_outbox; drop function keep_stuck_event()',
      );
    }
    const verify = await app.http.get('/v1/audit/verify', org.adminKey);
    expect(verify.body).toMatchObject({
      valid: true,
      entries_checked: before + 3,
      head: { seq: before + 3 },
    });
  });
});

describe('isolation', () => {
  it("never shows another org's entries or keys", async () => {
    const a = await signupOrg(app.http, 'A');
    const b = await signupOrg(app.http, 'B');
    const keyOfA = await mintKey(app.http, a.adminKey, ['audit:read']);
    const seenByB = await readAll(b.adminKey);
    expect(JSON.stringify(seenByB)).not.toContain(a.orgId);
    expect((await app.http.get(`/v1/keys/${keyOfA.id}`, b.adminKey)).status).toBe(404);
    expect((await app.http.delete(`/v1/keys/${keyOfA.id}`, b.adminKey)).status).toBe(404);
    expect((await app.http.post(`/v1/keys/${keyOfA.id}/rotate`, undefined, b.adminKey)).status).toBe(404);
    const listed = await app.http.get<{ data: { id: string }[] }>('/v1/keys?limit=100', b.adminKey);
    expect(listed.body.data.map((k) => k.id)).not.toContain(keyOfA.id);
    expect((await app.http.get(`/v1/audit?resource_id=${keyOfA.id}`, b.adminKey)).body.data).toEqual([]);
  });
});
