import type { RedisOptions } from 'bullmq';
import Redis from 'ioredis';

/**
 * How long a command of the service's own connections (and the job queues' producers) may go
 * unanswered: a Redis that keeps its connections open but answers nothing (a frozen host, a full
 * network buffer) fails the request with 503 instead of hanging it. Never on BullMQ's workers,
 * whose blocking fetches wait for seconds by design.
 */
export const REDIS_COMMAND_TIMEOUT_MS = 2_000;

/** Options BullMQ wants (it makes its own connections): no per-command retry limit. */
export function bullConnectionOptions(redisUrl: string): RedisOptions {
  const url = new URL(redisUrl);
  return {
    host: url.hostname,
    port: Number(url.port || 6379),
    username: url.username || undefined,
    password: url.password ? decodeURIComponent(url.password) : undefined,
    db: url.pathname.length > 1 ? Number(url.pathname.slice(1)) : 0,
    tls: url.protocol === 'rediss:' ? {} : undefined,
    maxRetriesPerRequest: null,
  };
}

/**
 * The API's own connection fails fast: with no offline queue a command during an outage
 * errors at once (503 unavailable) instead of hanging the request.
 */
export async function openRedis(redisUrl: string): Promise<Redis> {
  const redis = new Redis(redisUrl, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 5_000,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
    lazyConnect: true,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
    // Commands issued in one tick (rate limits, reservations, completion signals) share a socket
    // write. Not on BullMQ's connections: measured slower there.
    enableAutoPipelining: true,
  });
  redis.on('error', () => undefined); // reported through failing commands and /ready
  await redis.connect();
  return redis;
}
