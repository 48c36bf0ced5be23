import { OrgAtCapacity } from '../org-at-capacity';

/** What an org may spend at once, in milliseconds, before it waits for its share to refill. */
export const EVALUATION_BURST_MS = 1_000;
/** Every this many charges, orgs back to a full balance are forgotten. */
const SWEEP_EVERY = 1_000;
/** The bounds of how long a job past its org's share waits before it is taken again. */
const MIN_WAIT_MS = 125;
const MAX_WAIT_MS = 4_000;

interface Balance {
  /** Milliseconds still to spend; below 0, spent ahead of the share. */
  ms: number;
  /** When `ms` was last brought up to date (the clock's milliseconds). */
  at: number;
}

/**
 * Each org's share of one process's time evaluating policies. One evaluation is bounded (the
 * pattern budget and its 500 ms: about 2 s at worst), but their sum per org was not: twenty
 * invokes with heavy patterns held another org's invoke 18 s behind them on the same event loop.
 * So each org has a balance of milliseconds that refills at `msPerSecond` up to
 * EVALUATION_BURST_MS; every evaluation is charged what it took, wherever it ran, and an org in
 * debt waits (its job goes back to the queue) until the balance is back to 0. Cheap evaluations
 * (tens of microseconds) never come near it. The evaluations that may be heavy run in the policy
 * thread, where orgs also take turns (evaluation-runner.ts). Kept in the process's memory, as the
 * org's share of a worker's slots is.
 */
export class EvaluationTime {
  private readonly balances = new Map<string, Balance>();
  private charges = 0;

  constructor(
    readonly msPerSecond: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** How long the org must wait before its next evaluation: 0 when it may now. */
  waitMs(orgId: string): number {
    const owed = -this.balanceOf(orgId);
    return owed > 0 ? Math.ceil((owed * 1000) / this.msPerSecond) : 0;
  }

  /** Charges the org an evaluation that took `ms`. */
  charge(orgId: string, ms: number): void {
    this.balances.set(orgId, { ms: this.balanceOf(orgId) - ms, at: this.now() });
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
    this.admit(orgId, deferrable);
    const started = this.now();
    try {
      return evaluate();
    } finally {
      this.charge(orgId, this.now() - started);
    }
  }

  /** What `run` asks before it evaluates, for an evaluation run elsewhere (and charged after). */
  admit(orgId: string, deferrable: boolean): void {
    if (deferrable) this.assertTurn(orgId);
  }

  /**
   * Throws OrgAtCapacity while the org is in debt: for a job that will evaluate without waiting
   * later (an approved run, a retry, once reserved), asked before it reserves anything.
   */
  assertTurn(orgId: string): void {
    const wait = this.waitMs(orgId);
    if (wait === 0) return;
    throw new OrgAtCapacity(
      Math.min(MAX_WAIT_MS, Math.max(MIN_WAIT_MS, wait)),
      () => Promise.resolve(this.waitMs(orgId) === 0),
      `used its share of this process's policy evaluation time (${this.msPerSecond} ms a second)`,
    );
  }

  /** The org's balance now, refilled since it was charged; an org back to its full balance is forgotten. */
  private balanceOf(orgId: string): number {
    const last = this.balances.get(orgId);
    if (!last) return EVALUATION_BURST_MS;
    const ms = Math.min(EVALUATION_BURST_MS, last.ms + ((this.now() - last.at) * this.msPerSecond) / 1000);
    if (ms >= EVALUATION_BURST_MS) this.balances.delete(orgId);
    return ms;
  }
}
