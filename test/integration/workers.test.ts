import { eventually } from '../support/eventually';
import { mintKey, signupOrg } from '../support/factories';
import { startTestApp, type TestApp } from '../support/test-app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ workers: true });
});
afterAll(() => app.close());

describe('BullMQ workers', () => {
  it('seal pending audit events in the background, without any read', async () => {
    const org = await signupOrg(app.http);
    const sealed = await eventually(async () => {
      const { count } = (await app.infra
        .knex('audit_entries')
        .where({ org_id: org.orgId })
        .count('* as count')
        .first()) as {
        count: string;
      };
      return Number(count) === 3 ? count : null;
    });
    expect(Number(sealed)).toBe(3);
    const pending = await app.infra.knex('audit_outbox').where({ org_id: org.orgId });
    expect(pending).toEqual([]);
  });

  it('register the periodic jobs as BullMQ job schedulers', async () => {
    const schedulers = await app.infra.queues.queue('maintenance').getJobSchedulers();
    expect(schedulers.map((s) => s.name).sort()).toEqual([
      'approvals.sweep',
      'audit.seal',
      'idempotency.delete-expired',
      'invocations.reap',
      'keys.flush-last-used',
      'sessions.expire',
      'webhooks.prune',
      'webhooks.sweep',
    ]);
  });

  it('seal the audit log five times a second, so a busy second is never sealed in one burst', async () => {
    // Sealed once a second, ~1,000 events at a time under load, the burst held every call up
    // for ~100 ms once a second (npm run bench -- --open-loop with BENCH_TIMELINE shows it).
    const schedulers = await app.infra.queues.queue('maintenance').getJobSchedulers();
    expect(schedulers.find((s) => s.name === 'audit.seal')?.every).toBe(200);
  });

  it('write last-used times to the keys table when the flush job runs', async () => {
    const org = await signupOrg(app.http);
    const key = await mintKey(app.http, org.adminKey, ['audit:read']);
    const usedFrom = Date.now();
    await app.http.get('/v1/audit', key.key);
    const usedBy = Date.now();
    await app.infra.queues.enqueue('keys.flush-last-used', {});
    const row = await eventually(() =>
      app.infra.knex('api_keys').where({ id: key.id }).whereNotNull('last_used_at').first(),
    );
    // The time written is when the key was used, to the second (not, say, when the job ran).
    const usedAt = new Date(row.last_used_at).getTime();
    expect(usedAt).toBeGreaterThanOrEqual(usedFrom - 1_000);
    expect(usedAt).toBeLessThanOrEqual(usedBy + 1_000);
    const shown = await app.http.get<{ last_used_at: string }>(`/v1/keys/${key.id}`, org.adminKey);
    expect(new Date(shown.body.last_used_at).getTime()).toBe(usedAt);
  });
});
