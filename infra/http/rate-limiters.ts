import type Redis from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { DomainError } from '../../domain/errors';

export interface RateDecision {
  limit: number;
  remaining: number;
  resetSeconds: number;
}

const perMinuteLimiter = (redis: Redis, keyPrefix: string, points: number) =>
  new RateLimiterRedis({ storeClient: redis, keyPrefix, points, duration: 60, rejectIfRedisNotReady: true });

/**
 * A per-minute budget kept in Redis, so the limit holds across API replicas. Consuming past it
 * throws `rate_limited` with the seconds to wait.
 */
export class RateLimit {
  private readonly limiter: RateLimiterRedis;

  constructor(
    redis: Redis,
    keyPrefix: string,
    readonly perMinute: number,
  ) {
    this.limiter = perMinuteLimiter(redis, keyPrefix, perMinute);
  }

  async consume(subject: string): Promise<RateDecision> {
    try {
      const res = await this.limiter.consume(subject);
      return decisionOf(this.perMinute, res);
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      throw rateLimited(this.perMinute, err, `rate limit of ${this.perMinute} requests a minute reached`);
    }
  }
}

/**
 * Failed attempts per subject (a client address) in a one-minute window, kept in Redis so every
 * replica sees them. Only failures are counted; `check` refuses once the window's budget is spent.
 */
export class FailureLimit {
  private readonly limiter: RateLimiterRedis;

  constructor(
    redis: Redis,
    keyPrefix: string,
    readonly perMinute: number,
  ) {
    this.limiter = perMinuteLimiter(redis, keyPrefix, perMinute);
  }

  /** Throws `rate_limited` when `subject` has already failed `perMinute` times this window. */
  async check(subject: string, what: string): Promise<void> {
    const res = await this.limiter.get(subject);
    if (res && res.consumedPoints >= this.perMinute) throw rateLimited(this.perMinute, res, what);
  }

  async record(subject: string): Promise<void> {
    await this.limiter.penalty(subject, 1);
  }
}

function rateLimited(perMinute: number, res: RateLimiterRes, what: string): DomainError {
  const retry = Math.max(1, Math.ceil(res.msBeforeNext / 1000));
  return new DomainError('rate_limited', `${what}; retry in ${retry} s`, {
    retry_after_seconds: retry,
    rate: decisionOf(perMinute, res),
  });
}

const decisionOf = (limit: number, res: RateLimiterRes): RateDecision => ({
  limit,
  remaining: Math.max(0, res.remainingPoints),
  resetSeconds: Math.ceil(res.msBeforeNext / 1000),
});
