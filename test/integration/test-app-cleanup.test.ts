import { Client } from 'pg';
import { startTestApp } from '../support/test-app';
import { ADMIN_DATABASE_URL, createdDatabases } from '../support/test-db';

/** The test harness itself: a file whose app fails to start leaves no database behind. */
const exists = async (name: string): Promise<boolean> => {
  const client = new Client({ connectionString: ADMIN_DATABASE_URL });
  await client.connect();
  try {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [name]);
    return rowCount === 1;
  } finally {
    await client.end();
  }
};

it('drops the database it made when the app fails to start', async () => {
  const before = createdDatabases.length;
  await expect(startTestApp({ env: { CP_MASTER_KEY: 'not a key' } })).rejects.toThrow();
  const made = createdDatabases.slice(before);
  expect(made).toHaveLength(1);
  expect(await exists(made[0] as string)).toBe(false);
});
