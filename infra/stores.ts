import { resolve } from 'node:path';
import type { Config } from './config';
import type { StoreUrls } from './container';
import { startEmbeddedPostgres } from './embedded/embedded-postgres';
import { startEmbeddedRedis } from './embedded/embedded-redis';
import type { Logger } from './logger';

export interface Stores {
  urls: StoreUrls;
  /** Stops the embedded servers this process started, if any. */
  stop(): Promise<void>;
}

/** The configured stores, or embedded ones under the data directory for the quick start. */
export async function resolveStores(config: Config, logger: Logger): Promise<Stores> {
  const dataDir = resolve(config.CP_DATA_DIR);
  const stops: (() => Promise<void>)[] = [];
  const log = (store: string) => (msg: string) => logger.debug({ store }, msg.trim());
  let databaseUrl = config.DATABASE_URL;
  if (!databaseUrl) {
    logger.info({ dir: dataDir }, 'DATABASE_URL is not set: starting an embedded PostgreSQL');
    const pg = await startEmbeddedPostgres(dataDir, log('postgres'));
    stops.push(pg.stop);
    databaseUrl = pg.url;
  }
  let redisUrl = config.REDIS_URL;
  if (!redisUrl) {
    logger.info({ dir: dataDir }, 'REDIS_URL is not set: starting a local redis-server');
    const redis = await startEmbeddedRedis(dataDir, log('redis'));
    stops.push(redis.stop);
    redisUrl = redis.url;
  }
  return {
    urls: { databaseUrl, redisUrl },
    stop: async () => {
      for (const stop of stops.reverse()) await stop();
    },
  };
}
