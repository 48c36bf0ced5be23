import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

/**
 * The password is docker-compose.yml's; a server with trust auth (the CI machine's) ignores it, so
 * the same default works against both.
 */
export const ADMIN_DATABASE_URL =
  process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres:postgres@127.0.0.1:5432/postgres';
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

async function asAdmin<T>(work: (c: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: ADMIN_DATABASE_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** The names of the databases this test file made, in order (to check that each was dropped). */
export const createdDatabases: string[] = [];

/** A database of its own per test file, named so that nothing but a test database is ever dropped. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `cp_test_${randomBytes(6).toString('hex')}`;
  await asAdmin((c) => c.query(`create database ${name}`));
  createdDatabases.push(name);
  const url = new URL(ADMIN_DATABASE_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: async () => {
      if (!name.startsWith('cp_test_')) throw new Error(`refusing to drop ${name}: not a test database`);
      await asAdmin((c) => c.query(`drop database if exists ${name} with (force)`));
    },
  };
}

/** Runs SQL as the superuser in a test database (for tampering tests). */
export const superuserQuery = async (databaseUrl: string, sql: string, params: unknown[] = []) => {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return await client.query(sql, params);
  } finally {
    await client.end();
  }
};
