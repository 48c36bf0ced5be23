import type Redis from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { rateLimited, type DomainError } from '../../domain/errors';
import { TokenLeases } from './token-lease';

export interface RateDecision {
  limit: number;
  remaining: number;
  resetSeconds: number;
}

const perMinuteLimiter = (redis: Redis, keyPrefix: string, points: number) =>
  new RateLimiterRedis({ storeClient: redis, keyPrefix, points, duration: 60, rejectIfRedisNotReady: true });

/**
 * A per-minute budget kept in Redis, so the limit holds across API replicas. Consuming past it
 * throws `rate_limited` with the seconds to wait. Tokens are leased (infra/http/token-lease.ts):
 * a process takes a share of what is left in one round trip and spends it locally, so most
 * requests make no Redis call for their rate limit, and the limit is never exceeded.
 */
export class RateLimit {
  private readonly leases: TokenLeases;

  constructor(
    redis: Redis,
    keyPrefix: string,
    readonly perMinute: number,
    /** Whose limit it is, for the 429's message: "the org's rate limit". */
    private readonly what = 'rate limit',
  ) {
    this.leases = new TokenLeases(redis, keyPrefix, perMinute, 60_000);
  }

  async consume(subject: string): Promise<RateDecision> {
    const { granted, ...left } = await this.leases.take(subject);
    const rate = { limit: this.perMinute, ...left };
    if (granted) return rate;
    throw limitReached(rate, `${this.what} of ${this.perMinute} requests a minute reached`);
  }
}

/** The per-minute limits of the API: per key (or person), per org, and per address on public routes. */
export interface RateLimits {
  perKey: RateLimit;
  perOrg: RateLimit;
  perIp: RateLimit;
}

/**
 * An authenticated request counts against its key (or person) and against its org, so minting
 * keys does not multiply what one org may send. The answer's RateLimit-* headers show whichever
 * of the two is nearer its end. A request its key's limit refuses is not counted for the org.
 */
export async function consumeForCaller(
  limits: RateLimits,
  caller: { id: string; orgId: string },
): Promise<RateDecision> {
  const own = await limits.perKey.consume(caller.id);
  const org = await limits.perOrg.consume(caller.orgId);
  return org.remaining < own.remaining ? org : own;
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
    if (res && res.consumedPoints >= this.perMinute) throw failuresPast(this.perMinute, res, what);
  }

  async record(subject: string): Promise<void> {
    await this.limiter.penalty(subject, 1);
  }
}

function failuresPast(perMinute: number, res: RateLimiterRes, what: string): DomainError {
  return limitReached(
    {
      limit: perMinute,
      remaining: Math.max(0, res.remainingPoints),
      resetSeconds: Math.ceil(res.msBeforeNext / 1000),
    },
    what,
  );
}

const limitReached = (rate: RateDecision, what: string): DomainError =>
  rateLimited(what, rate.resetSeconds, { rate });
