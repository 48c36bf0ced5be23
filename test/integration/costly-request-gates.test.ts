import { eventually } from '../support/eventually';
import { signupOrg, type SignedUpOrg } from '../support/factories';
import { startTestApp, type TestApp } from '../support/test-app';

/**
 * Requests whose cost grows with what the org has stored run one per org at a time: an audit
 * verification reads the whole chain in one transaction (twenty at once drained the pool for
 * every org), a policy preview replays up to 10,000 actions on the API's event loop. While one
 * runs, the org's next is refused at once (429, Retry-After: 1).
 */
let app: TestApp;
let org: SignedUpOrg;

beforeAll(async () => {
  app = await startTestApp();
  org = await signupOrg(app.http, 'Verify Gate Inc');
});
afterAll(() => app.close());

const verify = () =>
  app.http.call<{ valid?: boolean; error_code?: string; retry_after_seconds?: number }>(
    'GET',
    '/v1/audit/verify',
    { token: org.adminKey },
  );

/** Runs `first` while `table` is locked, so it waits at its first read of it; returns its answer. */
async function whileHeld<T>(table: string, first: () => Promise<T>, meanwhile: () => Promise<void>) {
  const blocker = await app.infra.knex.transaction();
  try {
    await blocker.raw(`lock table ${table} in access exclusive mode`);
    const running = first();
    await eventually(async () => {
      const waiting = await app.infra.knex.raw<{ rows: unknown[] }>(
        `select 1 from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock' and query ilike ?`,
        [`%${table}%`],
      );
      return waiting.rows.length > 0;
    });
    await meanwhile();
    await blocker.commit();
    return await running;
  } finally {
    if (!blocker.isCompleted()) await blocker.rollback();
  }
}

const refusedNow = (res: { status: number; headers: Headers; body: unknown }) => {
  expect(res.status).toBe(429);
  expect(res.headers.get('retry-after')).toBe('1');
  expect(res.body).toMatchObject({ error_code: 'rate_limited', retry_after_seconds: 1 });
};

it("refuses an org's second verification while its first runs, and serves it once that is done", async () => {
  const first = await whileHeld('audit_entries', verify, async () => refusedNow(await verify()));
  expect(first.body).toMatchObject({ valid: true });
  expect((await verify()).body).toMatchObject({ valid: true });
});

const preview = () =>
  app.http.call<{ actions_replayed?: number }>('POST', '/v1/policies/preview', {
    token: org.adminKey,
    body: {
      since: '2026-01-01T00:00:00Z',
      policy: { name: 'draft', rules: [{ type: 'deny_models', models: ['m'] }] },
    },
  });

it("refuses an org's second policy preview while its first runs", async () => {
  const first = await whileHeld('invocations', preview, async () => refusedNow(await preview()));
  expect(first.status).toBe(200);
  expect((await preview()).status).toBe(200);
});
