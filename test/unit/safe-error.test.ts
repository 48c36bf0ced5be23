import { MikroORM } from '@mikro-orm/postgresql';
import { Client } from 'pg';
import { Writable } from 'node:stream';
import { describeError } from '../../infra/logging/safe-error';
import { createLogger } from '../../infra/logger';
import { createTestDatabase, type TestDatabase } from '../support/test-db';

jest.setTimeout(30_000);

const SECRET = 'scrypt$32768$8$1$c2VjcmV0LWhhc2g=';

/** Real errors from PostgreSQL: one from `pg` itself, one as MikroORM wraps it (SQL and detail in the message). */
let db: TestDatabase;
let pgError: unknown;
let driverError: unknown;
let knexError: unknown;

const failing = async <T>(work: () => Promise<T>): Promise<unknown> => {
  try {
    await work();
  } catch (err) {
    return err;
  }
  throw new Error('expected the query to fail');
};

beforeAll(async () => {
  db = await createTestDatabase();
  const client = new Client({ connectionString: db.url });
  await client.connect();
  await client.query(
    `create table accounts (id int primary key, hash text not null check (hash not like 'scrypt$%'))`,
  );
  pgError = await failing(() => client.query('insert into accounts (id, hash) values ($1, $2)', [1, SECRET]));
  await client.end();
  const orm = await MikroORM.init({
    clientUrl: db.url,
    entities: [],
    discovery: { warnWhenNoEntities: false },
    allowGlobalContext: true,
  });
  const connection = orm.em.getConnection();
  // Through the driver, as the unit of work writes: wrapped as a DriverException.
  driverError = await failing(() => orm.em.getDriver().nativeInsert('accounts', { id: 2, hash: SECRET }));
  knexError = await failing(() => connection.getKnex().raw('select ?::int as n', [SECRET]));
  await orm.close();
});

afterAll(async () => {
  await db.drop();
});

describe('describeError', () => {
  it('names a pg error by code, constraint and table, without its values', () => {
    const described = describeError(pgError);
    expect(described).toMatchObject({
      type: 'DatabaseError',
      code: '23514',
      constraint: 'accounts_hash_check',
      table: 'accounts',
      routine: 'ExecConstraints',
    });
    expect(JSON.stringify(described)).not.toContain('scrypt');
    expect(described.stack).toMatch(/\n\s+at /);
  });

  it('names a MikroORM driver exception the same way, though its message holds the SQL and the row', () => {
    expect((driverError as Error).message).toContain(SECRET);
    const described = describeError(driverError);
    expect(described).toMatchObject({
      type: 'CheckConstraintViolationException',
      code: '23514',
      constraint: 'accounts_hash_check',
      table: 'accounts',
    });
    const text = JSON.stringify(described);
    expect(text).not.toContain('scrypt');
    expect(text).not.toContain('Failing row');
    expect(text).not.toMatch(/insert into/i);
  });

  it('keeps a value quoted by PostgreSQL in its own message out of the log', () => {
    expect((knexError as Error).message).toContain('scrypt');
    const described = describeError(knexError);
    expect(described.code).toBe('22P02');
    expect(JSON.stringify(described)).not.toContain('scrypt');
  });

  it('looks through a cause', () => {
    const wrapped = new Error('could not save the user', { cause: driverError });
    const described = describeError(wrapped);
    expect(described).toMatchObject({
      message: 'could not save the user',
      cause: { code: '23514', table: 'accounts' },
    });
    expect(JSON.stringify(described)).not.toContain('scrypt');
  });

  it('cuts the statement knex puts before a non-database message', () => {
    const err = new Error(
      `insert into users (hash) values ('${SECRET}') - Connection terminated unexpectedly`,
    );
    const described = describeError(err);
    expect(described.message).toBe('[statement withheld] - Connection terminated unexpectedly');
    expect(JSON.stringify(described)).not.toContain('scrypt');
  });

  it('keeps the message, code and stack of an ordinary error', () => {
    const err = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' });
    expect(describeError(err)).toEqual({
      type: 'Error',
      message: 'connect ECONNREFUSED 127.0.0.1:6379',
      code: 'ECONNREFUSED',
      stack: expect.stringMatching(/^Error: connect ECONNREFUSED 127\.0\.0\.1:6379\n\s+at /),
    });
  });

  it('names anything thrown that is not an error by its type alone', () => {
    expect(describeError(`password ${SECRET}`)).toEqual({ type: 'string' });
    expect(describeError({ hash: SECRET })).toEqual({ type: 'Object' });
  });

  it('passes a description through unchanged, so a call site and the logger may both describe', () => {
    const described = describeError(driverError);
    expect(describeError(described)).toBe(described);
  });

  it('is what the service logger writes for `err`', () => {
    const lines: string[] = [];
    const logger = createLogger(
      'info',
      new Writable({ write: (c, _e, done) => (lines.push(String(c)), done()) }),
    );
    logger.error({ err: driverError }, 'failed');
    const entry = JSON.parse(lines[0] as string) as { err: Record<string, unknown> };
    expect(entry.err).toMatchObject({ code: '23514', constraint: 'accounts_hash_check', table: 'accounts' });
    expect(lines[0]).not.toContain('scrypt');
  });
});
