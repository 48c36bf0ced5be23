import { Client } from 'pg';
import { StatementStats } from '../../bench/pg-statements';
import { ADMIN_DATABASE_URL, createTestDatabase, type TestDatabase } from '../support/test-db';

/**
 * BENCH_PG_STATEMENTS against this machine's PostgreSQL: whichever way the server is set up, the
 * bench either counts this database's statements or says how to load the extension.
 */
describe('the bench counting PostgreSQL statements', () => {
  let db: TestDatabase;
  let loaded: boolean;

  beforeAll(async () => {
    db = await createTestDatabase();
    const admin = new Client({ connectionString: ADMIN_DATABASE_URL });
    await admin.connect();
    const { rows } = await admin.query<{ libs: string }>(
      `select current_setting('shared_preload_libraries') as libs`,
    );
    await admin.end();
    loaded = (rows[0]?.libs ?? '').includes('pg_stat_statements');
  });
  afterAll(() => db.drop());

  it('counts what this database ran since the reset, or says how to load the extension', async () => {
    if (!loaded) {
      await expect(StatementStats.open(db.url)).rejects.toThrow(
        /shared_preload_libraries = 'pg_stat_statements'[\s\S]*restart/,
      );
      return;
    }
    const stats = await StatementStats.open(db.url);
    const client = new Client({ connectionString: db.url });
    await client.connect();
    try {
      await client.query('select 40 + 2 as before_the_reset');
      await stats.reset();
      for (let i = 0; i < 3; i++) await client.query('select $1::int + 1 as counted', [i]);
      const rows = await stats.read();
      expect(rows.find((r) => r.query.includes('counted'))?.calls).toBe(3);
      expect(rows.some((r) => r.query.includes('before_the_reset'))).toBe(false);
    } finally {
      await client.end();
      await stats.close();
    }
  });
});
