import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { startApi, type RunningApi } from '../../api/server';
import { loadConfig } from '../../infra/config';
import { createInfra, type Infra } from '../../infra/container';
import { createLogger } from '../../infra/logger';
import { startWorkers, type RunningWorkers } from '../../workers/start-workers';
import { startSyncRuns } from '../../workers/sync-runs';
import { HttpClient } from './http-client';
import { createTestDatabase, TEST_REDIS_URL, type TestDatabase } from './test-db';
import { deleteKeysWithPrefix } from './redis-keys';
import { conformsToDocs } from './reply-conformance';

/** One key for every app of a test run, so replicas agree on signatures. */
export const TEST_MASTER_KEY = randomBytes(32).toString('base64');

export interface TestAppOptions {
  env?: Record<string, string>;
  workers?: boolean;
  /** Keep every log line (at trace level, SQL included) to search them. */
  captureLogs?: boolean;
  /** Reuse a database (a second replica); the first app owns and drops it. */
  database?: TestDatabase;
  redisUrl?: string;
  redisPrefix?: string;
}

export interface TestApp {
  http: HttpClient;
  infra: Infra;
  db: TestDatabase;
  prefix: string;
  logs: string[];
  close(): Promise<void>;
}

/** The real API (and optionally workers) on a fresh database and Redis key prefix. */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const db = options.database ?? (await createTestDatabase());
  try {
    return await startOn(db, options);
  } catch (err) {
    // An app that never started has no close() to call: its database would be left behind.
    if (!options.database) await db.drop().catch(() => undefined);
    throw err;
  }
}

async function startOn(db: TestDatabase, options: TestAppOptions): Promise<TestApp> {
  const prefix = options.redisPrefix ?? `cpt_${randomBytes(5).toString('hex')}`;
  const config = loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: options.captureLogs ? 'trace' : 'silent',
    CP_REDIS_PREFIX: prefix,
    CP_RATE_LIMIT_PER_MINUTE: '100000',
    CP_PUBLIC_RATE_LIMIT_PER_MINUTE: '100000',
    CP_AUTH_FAILURES_PER_MINUTE: '100000',
    CP_MASTER_KEY: TEST_MASTER_KEY,
    ...options.env,
  });
  const logs: string[] = [];
  const sink = new Writable({ write: (chunk, _enc, done) => (logs.push(String(chunk)), done()) });
  const logger = createLogger(config.LOG_LEVEL, sink);
  const redisUrl = options.redisUrl ?? TEST_REDIS_URL;
  const infra = await createInfra(config, { databaseUrl: db.url, redisUrl }, logger);
  const workers: RunningWorkers | null = options.workers ? await startWorkers(infra) : null;
  const syncRuns = startSyncRuns(infra, false);
  const api: RunningApi = await startApi(infra, 0, '127.0.0.1', { checkReply: conformsToDocs });
  return {
    http: new HttpClient(api.url),
    infra,
    db,
    prefix,
    logs,
    close: async () => {
      await api.close();
      await syncRuns?.close();
      await workers?.close();
      await deleteKeysWithPrefix(infra.redis, prefix).catch(() => undefined);
      await infra.close();
      if (!options.database) await db.drop();
    },
  };
}
