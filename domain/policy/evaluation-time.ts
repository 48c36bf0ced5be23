import { OrgAtCapacity } from '../org-at-capacity';

/** What an org may spend at once, in milliseconds, before it waits for its share to refill. */
export const EVALUATION_BURST_MS = 1_000;
/** Every this many charges, orgs back to a full balance are forgotten. */
const SWEEP_EVERY = 1_000;
/** The bounds of how long a job past its org's share waits before it is taken again. */
const MIN_WAIT_MS = 125;
const MAX_WAIT_MS = 4_000;

interface Balance {
  /** Milliseconds the org may still spend; below 0 it spent ahead of its share. */
  ms: number;
  /** When `ms` was last brought up to date (the clock's milliseconds). */
  at: number;
}

/**
 * Each org's share of one process's time evaluating policies. One evaluation is bounded (the
 * pattern budget: a few seconds at worst), but their sum per org was not: twenty invokes with
 * heavy patterns held another org's invoke 18 s behind them on the same event loop. So each org
 * has a balance of milliseconds that refills at `msPerSecond` up to EVALUATION_BURST_MS; every
 * evaluation is charged what it took, and an org in debt waits (its job goes back to the queue)
 * until the balance is back to 0. Cheap evaluations (tens of microseconds) never come near it.
 * Kept in the process's memory, as the org's share of a worker's slots is: nothing asked of Redis.
 */
export class EvaluationTime {
  private readonly balances = new Map<string, Balance>();
  private charges = 0;

  constructor(
    readonly msPerSecond: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** How long the org must wait before its next evaluation: 0 when it may evaluate now. */
  waitMs(orgId: string): number {
    const ms = this.balanceOf(orgId);
    return ms >= 0 ? 0 : Math.ceil((-ms * 1000) / this.msPerSecond);
  }

  /** Charges the org an evaluation that took `ms`. */
  charge(orgId: string, ms: number): void {
    const balance = this.balanceOf(orgId) - ms;
    this.balances.set(orgId, { ms: balance, at: this.now() });
    if (++this.charges % SWEEP_EVERY === 0) for (const id of [...this.balances.keys()]) this.balanceOf(id);
  }

  /** Orgs with a balance kept (in debt, or not yet refilled). */
  get tracked(): number {
    return this.balances.size;
  }

  /**
   * Runs one evaluation and charges it. A caller whose job can wait (`deferrable`) is refused
   * with OrgAtCapacity while its org is in debt; one that cannot (the checks before a retry or an
   * approved run, which hold a reservation) evaluates and is charged all the same.
   */
  run<T>(orgId: string, deferrable: boolean, evaluate: () => T): T {
    if (deferrable) this.assertRoom(orgId);
    const started = this.now();
    try {
      return evaluate();
    } finally {
      this.charge(orgId, this.now() - started);
    }
  }

  private assertRoom(orgId: string): void {
    const wait = this.waitMs(orgId);
    if (wait === 0) return;
    throw new OrgAtCapacity(
      Math.min(MAX_WAIT_MS, Math.max(MIN_WAIT_MS, wait)),
      () => Promise.resolve(this.waitMs(orgId) === 0),
      `used its share of this process's policy evaluation time (${this.msPerSecond} ms a second)`,
    );
  }

  /** The org's balance now; an org back to its full balance is forgotten (nothing kept for it). */
  private balanceOf(orgId: string): number {
    const last = this.balances.get(orgId);
    if (!last) return EVALUATION_BURST_MS;
    const ms = last.ms + ((this.now() - last.at) * this.msPerSecond) / 1000;
    if (ms < EVALUATION_BURST_MS) return ms;
    this.balances.delete(orgId);
    return EVALUATION_BURST_MS;
  }
}
