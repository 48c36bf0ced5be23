import { MikroORM } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import { Client } from 'pg';
import type { Logger } from '../logger';
import { ENTITIES } from './entities';
import { MIGRATIONS } from './migrations';

export async function openOrm(databaseUrl: string, logger: Logger, poolMax = 10): Promise<MikroORM> {
  const log = (level: 'warn' | 'error' | 'debug') => (message: unknown) =>
    logger[level]({ component: 'knex' }, String(message));
  return MikroORM.init({
    clientUrl: databaseUrl,
    entities: ENTITIES,
    extensions: [Migrator],
    // Entities are mapped without relations, so foreign keys are deferred to commit (insert order is free).
    migrations: {
      migrationsList: MIGRATIONS,
      transactional: true,
      allOrNothing: true,
      snapshot: false,
      silent: true,
    },
    pool: { min: 0, max: poolMax, acquireTimeoutMillis: 5_000 },
    driverOptions: {
      connection: { connectionTimeoutMillis: 5_000, statement_timeout: 30_000 },
      // knex warns on console by default; its lines belong in the service log.
      log: { warn: log('warn'), error: log('error'), deprecate: log('debug'), debug: log('debug') },
    },
    discovery: { warnWhenNoEntities: false },
    allowGlobalContext: false,
    // SQL with parameters only at trace level: tests capture it to prove no secret reaches a log.
    debug: logger.isLevelEnabled('trace') ? ['query', 'query-params'] : false,
    logger: (message) => logger.trace({ component: 'mikro-orm' }, message),
  });
}

// Any constant: replicas starting together queue on this lock instead of racing migrations.
const MIGRATION_LOCK = 727_274_001;

/** Applies pending migrations under a PostgreSQL advisory lock held on its own connection. */
export async function migrate(orm: MikroORM, databaseUrl: string, logger: Logger): Promise<void> {
  const lock = new Client({ connectionString: databaseUrl });
  await lock.connect();
  try {
    await lock.query('select pg_advisory_lock($1)', [MIGRATION_LOCK]);
    const applied = await orm.getMigrator().up();
    if (applied.length > 0) logger.info({ migrations: applied.map((m) => m.name) }, 'applied migrations');
  } finally {
    await lock.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    await lock.end();
  }
}
