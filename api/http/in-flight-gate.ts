import { rateLimited, type DomainError } from '../../domain/errors';
import { PerKeySlots } from '../../domain/per-key-slots';

/**
 * At most `perOrg` of one org's requests of a kind, and `total` of all orgs', run at once in this
 * process; one more is answered 429 `rate_limited` at once (Retry-After: 1). For requests whose
 * cost grows with what the org has stored (a whole audit chain, a replay of its history), which a
 * per-key rate cannot bound: they hold a database connection or the event loop while they run.
 */
export class InFlightGate {
  private readonly orgs: PerKeySlots;
  private total = 0;

  constructor(
    private readonly what: string,
    perOrg: number,
    private readonly max: number,
  ) {
    this.orgs = new PerKeySlots(perOrg);
  }

  async run<T>(orgId: string, work: () => Promise<T>): Promise<T> {
    this.assertRoom(orgId);
    if (!this.orgs.take(orgId)) throw this.refusal(`the org has ${this.orgs.heldBy(orgId)} running`);
    this.total += 1;
    try {
      return await work();
    } finally {
      this.total -= 1;
      this.orgs.release(orgId);
    }
  }

  /**
   * Throws the 429 `run` would answer now, without taking a place: for work that comes before it
   * and is wasted if it is refused (a preview's patterns, checked before its body's schema).
   */
  assertRoom(orgId: string): void {
    if (this.total >= this.max) throw this.refusal(`${this.total} running on this server`);
    if (!this.orgs.hasRoom(orgId)) throw this.refusal(`the org has ${this.orgs.heldBy(orgId)} running`);
  }

  private refusal(why: string): DomainError {
    return rateLimited(`${this.what}: ${why}, the most at once`, 1);
  }
}
