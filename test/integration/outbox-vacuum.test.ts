import { OutboxVacuum, VACUUM_AFTER_EVENTS } from '../../infra/audit/outbox-vacuum';
import { eventually } from '../support/eventually';
import { signupOrg } from '../support/factories';
import { startTestApp, type TestApp } from '../support/test-app';

/**
 * The seal job keeps audit_outbox, a queue table, free of dead rows itself (autovacuum comes by
 * once a minute at most), and finds the orgs with pending events by index, not by reading the table.
 */
let app: TestApp;
beforeAll(async () => {
  app = await startTestApp(); // no workers: this file alone seals
});
afterAll(() => app.close());

/** How often audit_outbox was vacuumed by hand in this test database (the statistics lag a little). */
const vacuums = async (): Promise<number> => {
  const { rows } = await app.infra.knex.raw<{ rows: { vacuum_count: string }[] }>(
    `select vacuum_count from pg_stat_user_tables where relname = 'audit_outbox'`,
  );
  return Number(rows[0]?.vacuum_count ?? 0);
};

/** `count` events of one org straight into the outbox, as writers leave them. */
async function pending(orgId: string, count: number): Promise<void> {
  const rows = Array.from({ length: count }, (_, i) => ({
    id: `evt_${orgId}_${i}_${Date.now()}`,
    org_id: orgId,
    at: new Date(),
    actor_type: 'system',
    actor_id: 'system',
    action: 'test.event',
    resource_type: 'test',
    resource_id: String(i),
    outcome: 'success',
    details: JSON.stringify({ i }),
  }));
  await app.infra.knex.batchInsert('audit_outbox', rows, 500);
}

const outboxSize = async () =>
  Number(((await app.infra.knex('audit_outbox').count('* as n').first()) as { n: string }).n);

describe('sealing the outbox', () => {
  it('seals every org with pending events, found by index', async () => {
    const orgs = await Promise.all([signupOrg(app.http), signupOrg(app.http), signupOrg(app.http)]);
    const total = await app.infra.auditLog.sealAll();
    expect(total).toBeGreaterThanOrEqual(9); // three events each at signup
    expect(await outboxSize()).toBe(0);
    for (const org of orgs) {
      const verified = await app.http.get<{ valid: boolean; entries_checked: number }>(
        '/v1/audit/verify',
        org.adminKey,
      );
      expect(verified.body).toMatchObject({ valid: true, entries_checked: 3 });
    }
  });

  it(`vacuums audit_outbox once ${VACUUM_AFTER_EVENTS} events were sealed since the last time`, async () => {
    const org = await signupOrg(app.http);
    // A full count first, so this starts from a vacuum whatever the tests before sealed.
    await pending(org.orgId, VACUUM_AFTER_EVENTS);
    await app.infra.auditLog.sealAll();
    await eventually(async () => (await vacuums()) > 0);
    const before = await vacuums();
    await pending(org.orgId, VACUUM_AFTER_EVENTS - 10);
    expect(await app.infra.auditLog.sealAll()).toBe(VACUUM_AFTER_EVENTS - 10);
    await new Promise((r) => setTimeout(r, 700)); // a vacuum reports at once; leave it time anyway
    expect(await vacuums()).toBe(before);
    await pending(org.orgId, 10);
    await app.infra.auditLog.sealAll();
    await eventually(async () => (await vacuums()) === before + 1);
    expect(await outboxSize()).toBe(0);
  });

  it('counts across calls and starts over after each vacuum', async () => {
    const vacuum = new OutboxVacuum(app.infra.knex, 3);
    expect(await vacuum.afterSealing(2)).toBe(false);
    expect(await vacuum.afterSealing(1)).toBe(true);
    expect(await vacuum.afterSealing(2)).toBe(false);
    expect(await vacuum.afterSealing(0)).toBe(false);
    expect(await vacuum.afterSealing(5)).toBe(true);
  });
});
