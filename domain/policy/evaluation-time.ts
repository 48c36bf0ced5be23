import { OrgAtCapacity } from '../org-at-capacity';

/** What an org may spend at once, in milliseconds, before it waits for its share to refill. */
export const EVALUATION_BURST_MS = 1_000;
/**
 * Pattern work (pattern-budget.ts units) past which an evaluation may be heavy: about 0.1 s for
 * the costliest patterns, a few milliseconds for plain ones.
 */
export const HEAVY_WORK = 2_000_000;
/** Every this many charges, orgs back to a full balance are forgotten. */
const SWEEP_EVERY = 1_000;
/** The bounds of how long a job past its org's share waits before it is taken again. */
const MIN_WAIT_MS = 125;
const MAX_WAIT_MS = 4_000;
/** The heavy evaluations of every org together: this many orgs' shares. */
const HEAVY_SHARES = 2;

interface Balance {
  /** Milliseconds still to spend; below 0, spent ahead of the share. */
  ms: number;
  /** When `ms` was last brought up to date (the clock's milliseconds). */
  at: number;
}

/** How one evaluation is run: whether its job can wait, and whether it may be heavy. */
export interface EvaluationKind {
  deferrable: boolean;
  heavy: boolean;
}

/**
 * Each org's share of one process's time evaluating policies. One evaluation is bounded (the
 * pattern budget and its 500 ms: about 2 s at worst), but their sum per org was not: twenty
 * invokes with heavy patterns held another org's invoke 18 s behind them on the same event loop.
 * So each org has a balance of milliseconds that refills at `msPerSecond` up to
 * EVALUATION_BURST_MS; every evaluation is charged what it took, and an org in debt waits (its job
 * goes back to the queue) until the balance is back to 0. New orgs cost nothing to make, so where
 * the evaluations that may be heavy (HEAVY_WORK) run on the event loop, those of every org together
 * also share a balance, twice an org's: while it is in debt, those wait too. In the policy thread
 * orgs take turns instead, and only their own balance applies (evaluation-runner.ts). Cheap
 * evaluations (tens of microseconds) never come near either. Kept in the process's memory, as the
 * org's share of a worker's slots is.
 */
export class EvaluationTime {
  private readonly balances = new Map<string, Balance>();
  private heavy: Balance | null = null;
  private charges = 0;

  constructor(
    readonly msPerSecond: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** How long the org must wait before its next evaluation (heavy: one that may be): 0 when it may now. */
  waitMs(orgId: string, heavy = false): number {
    const owed = Math.max(-this.ownBalance(orgId), heavy ? -this.heavyBalance() / HEAVY_SHARES : 0);
    return owed > 0 ? Math.ceil((owed * 1000) / this.msPerSecond) : 0;
  }

  /** Charges the org an evaluation that took `ms` (and the heavy ones' balance, for one that may be). */
  charge(orgId: string, ms: number, heavy = false): void {
    const at = this.now();
    this.balances.set(orgId, { ms: this.ownBalance(orgId) - ms, at });
    if (heavy) this.heavy = { ms: this.heavyBalance() - ms, at };
    if (++this.charges % SWEEP_EVERY === 0) for (const id of [...this.balances.keys()]) this.ownBalance(id);
  }

  /** Orgs with a balance kept (in debt, or not yet refilled). */
  get tracked(): number {
    return this.balances.size;
  }

  /**
   * Runs one evaluation and charges it. A caller whose job can wait (`deferrable`) is refused
   * with OrgAtCapacity while its org (or, for one that may be heavy, every org's heavy ones) is in
   * debt; one that cannot (the checks before a retry or an approved run, which hold a
   * reservation) evaluates and is charged all the same.
   */
  run<T>(orgId: string, kind: EvaluationKind, evaluate: () => T): T {
    this.admit(orgId, kind);
    const started = this.now();
    try {
      return evaluate();
    } finally {
      this.charge(orgId, this.now() - started, kind.heavy);
    }
  }

  /**
   * What `run` asks before it evaluates, for an evaluation run elsewhere (and charged after): a
   * deferrable one is refused with OrgAtCapacity while its org, or the heavy ones, are in debt.
   */
  admit(orgId: string, kind: EvaluationKind): void {
    if (kind.deferrable) this.assertRoom(orgId, kind.heavy);
  }

  /**
   * Throws OrgAtCapacity while the org is in debt: for a job that will evaluate without waiting
   * later (an approved run, a retry, once reserved), asked before it reserves anything.
   */
  assertTurn(orgId: string): void {
    this.assertRoom(orgId, false);
  }

  private assertRoom(orgId: string, heavy: boolean): void {
    const wait = this.waitMs(orgId, heavy);
    if (wait === 0) return;
    throw new OrgAtCapacity(
      Math.min(MAX_WAIT_MS, Math.max(MIN_WAIT_MS, wait)),
      () => Promise.resolve(this.waitMs(orgId, heavy) === 0),
      `used its share of this process's policy evaluation time (${this.msPerSecond} ms a second), ` +
        'or its heavy evaluations wait for those of every org',
    );
  }

  /** The org's balance now; an org back to its full balance is forgotten (nothing kept for it). */
  private ownBalance(orgId: string): number {
    const ms = this.refilled(this.balances.get(orgId), this.msPerSecond, EVALUATION_BURST_MS);
    if (ms >= EVALUATION_BURST_MS) this.balances.delete(orgId);
    return ms;
  }

  private heavyBalance(): number {
    const rate = this.msPerSecond * HEAVY_SHARES;
    return this.refilled(this.heavy, rate, EVALUATION_BURST_MS * HEAVY_SHARES);
  }

  /** A balance as it stands now: refilled at `rate` ms a second since it was charged, up to `burst`. */
  private refilled(last: Balance | null | undefined, rate: number, burst: number): number {
    if (!last) return burst;
    return Math.min(burst, last.ms + ((this.now() - last.at) * rate) / 1000);
  }
}
