import { DomainError } from '../../domain/errors';

/**
 * At most `perOrg` of one org's requests of a kind, and `total` of all orgs', run at once in this
 * process; one more is answered 429 `rate_limited` at once (Retry-After: 1). For requests whose
 * cost grows with what the org has stored (a whole audit chain, a replay of its history), which a
 * per-key rate cannot bound: they hold a database connection or the event loop while they run.
 */
export class InFlightGate {
  private readonly running = new Map<string, number>();
  private total = 0;

  constructor(
    private readonly what: string,
    private readonly perOrg: number,
    private readonly max: number,
  ) {}

  async run<T>(orgId: string, work: () => Promise<T>): Promise<T> {
    const mine = this.running.get(orgId) ?? 0;
    if (mine >= this.perOrg || this.total >= this.max)
      throw new DomainError(
        'rate_limited',
        mine >= this.perOrg
          ? `${this.what}: the org has ${mine} running, the most at once; retry in 1 s`
          : `${this.what}: ${this.total} running on this server, the most at once; retry in 1 s`,
        { retry_after_seconds: 1 },
      );
    this.running.set(orgId, mine + 1);
    this.total += 1;
    try {
      return await work();
    } finally {
      this.total -= 1;
      const left = (this.running.get(orgId) ?? 1) - 1;
      if (left > 0) this.running.set(orgId, left);
      else this.running.delete(orgId);
    }
  }
}
