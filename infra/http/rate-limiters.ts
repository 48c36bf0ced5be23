import type Redis from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { DomainError } from '../../domain/errors';

export interface RateDecision {
  limit: number;
  remaining: number;
  resetSeconds: number;
}

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
    this.limiter = new RateLimiterRedis({
      storeClient: redis,
      keyPrefix,
      points: perMinute,
      duration: 60,
      rejectIfRedisNotReady: true,
    });
  }

  async consume(subject: string): Promise<RateDecision> {
    try {
      const res = await this.limiter.consume(subject);
      return this.decision(res);
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      const retry = Math.max(1, Math.ceil(err.msBeforeNext / 1000));
      throw new DomainError(
        'rate_limited',
        `rate limit of ${this.perMinute} requests a minute reached; retry in ${retry} s`,
        {
          retry_after_seconds: retry,
          rate: this.decision(err),
        },
      );
    }
  }

  private decision(res: RateLimiterRes): RateDecision {
    return {
      limit: this.perMinute,
      remaining: Math.max(0, res.remainingPoints),
      resetSeconds: Math.ceil(res.msBeforeNext / 1000),
    };
  }
}
