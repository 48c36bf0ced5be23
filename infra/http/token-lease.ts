import type Redis from 'ioredis';

/**
 * Adds the tokens asked for to a window's counter (opening the window if it is new) and answers
 * the counter after the lease and the window's milliseconds left. The counter is the one
 * rate-limiter-flexible keeps (`<prefix>:<subject>`, an integer with an expiry), so both read it.
 */
const LEASE_SCRIPT = `
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  ttl = tonumber(ARGV[2])
end
return {n, ttl}`;

/**
 * A process leases this share of what is left of a window at a time. The smaller it is, the more
 * round trips; the larger, the more tokens sit unused in one replica while another is refused.
 */
const LEASE_SHARE = 16;
/** Windows that ended are dropped from memory once this many subjects are held, at most once a second. */
const SWEEP_AT = 10_000;
const SWEEP_EVERY_MS = 1_000;

interface Window {
  /** Tokens this process holds and has not spent. */
  tokens: number;
  /** The window's counter after this process's last lease: everything leased by anyone then. */
  leased: number;
  endsAt: number;
}

export interface Taken {
  granted: boolean;
  remaining: number;
  resetSeconds: number;
}

type LeaseClient = Redis & {
  cpLeaseTokens(key: string, tokens: number, windowMs: number): Promise<[number, number]>;
};

/**
 * Tokens of a fixed window per subject, shared by every process through one Redis counter and
 * spent locally. The first request of a window leases one token; later leases take 1/16 of what
 * the window has left, down to one token near the limit. So:
 * - the limit is exact: no more than `limit` tokens are ever leased in a window;
 * - one process alone sees exact counts (`remaining` is the limit minus what it spent);
 * - with several processes, a request may be refused while another process still holds unused
 *   tokens: at most 1/16 of what was left when that process leased them;
 * - once the window is spent, refusals need no round trip until it ends.
 */
export class TokenLeases {
  private readonly windows = new Map<string, Window>();
  private readonly leasing = new Map<string, Promise<Window>>();
  private sweptAt = 0;

  constructor(
    private readonly redis: Redis,
    private readonly keyPrefix: string,
    private readonly limit: number,
    private readonly windowMs: number,
  ) {
    redis.defineCommand('cpLeaseTokens', { numberOfKeys: 1, lua: LEASE_SCRIPT });
  }

  /** Subjects this process holds a window for (ended ones included until swept). */
  get held(): number {
    return this.windows.size;
  }

  async take(subject: string): Promise<Taken> {
    let window = this.live(subject, Date.now());
    for (;;) {
      if (window && window.tokens > 0) {
        window.tokens--;
        return this.taken(true, window);
      }
      if (window && window.leased >= this.limit) return this.taken(false, window);
      // Spent from as the lease left it, even if its window ended meanwhile: the tokens were
      // counted in that window. Checking the clock again would let a process that stalls longer
      // than a short window lease over and over and never spend what it leased.
      window = await this.lease(subject);
    }
  }

  private taken(granted: boolean, window: Window): Taken {
    return {
      granted,
      remaining: Math.max(0, this.limit - window.leased) + window.tokens,
      resetSeconds: Math.max(0, Math.ceil((window.endsAt - Date.now()) / 1000)),
    };
  }

  private live(subject: string, now: number): Window | undefined {
    const window = this.windows.get(subject);
    if (window && window.endsAt <= now) {
      this.windows.delete(subject);
      return undefined;
    }
    return window;
  }

  /** One lease in flight per subject: concurrent requests wait for it and share its tokens. */
  private lease(subject: string): Promise<Window> {
    let pending = this.leasing.get(subject);
    if (!pending) {
      pending = this.fetchLease(subject).finally(() => this.leasing.delete(subject));
      this.leasing.set(subject, pending);
    }
    return pending;
  }

  private async fetchLease(subject: string): Promise<Window> {
    // As rate-limiter-flexible's rejectIfRedisNotReady: an outage answers 503, not a wait.
    if (this.redis.status !== 'ready') throw new Error('Redis is not ready');
    const before = this.live(subject, Date.now());
    const asked = before ? Math.max(1, Math.floor((this.limit - before.leased) / LEASE_SHARE)) : 1;
    const [leased, ttl] = await (this.redis as LeaseClient).cpLeaseTokens(
      `${this.keyPrefix}:${subject}`,
      asked,
      this.windowMs,
    );
    const granted = Math.max(0, Math.min(asked, this.limit - (leased - asked)));
    // A lease that opened the window (the counter was empty) starts afresh: tokens held from the
    // window that ended are not carried into it.
    const opened = leased === asked;
    const kept = opened ? 0 : (this.live(subject, Date.now())?.tokens ?? 0);
    this.sweep();
    const window = { tokens: kept + granted, leased, endsAt: Date.now() + ttl };
    this.windows.set(subject, window);
    return window;
  }

  /** Gated in time: with more live subjects than SWEEP_AT (a flood of addresses), not every lease scans them all. */
  private sweep(): void {
    const now = Date.now();
    if (this.windows.size < SWEEP_AT || now - this.sweptAt < SWEEP_EVERY_MS) return;
    this.sweptAt = now;
    for (const [subject, window] of this.windows) if (window.endsAt <= now) this.windows.delete(subject);
  }
}
