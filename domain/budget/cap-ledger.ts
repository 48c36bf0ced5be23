import type { CapAmounts } from './charges';

export type CapName = 'cost' | 'calls' | 'tokens';

export type ReserveOutcome =
  | { kind: 'reserved' }
  /** The amount does not fit under a cap next to what is spent and reserved. */
  | { kind: 'refused'; cap: CapName; limit: number; remaining: number }
  /** The ledger has no state for the session (Redis lost it): restore from the snapshot, retry. */
  | { kind: 'missing' }
  /** This charge was settled already: a duplicate run must not call the provider. */
  | { kind: 'settled' }
  /**
   * This charge was already reserved by an earlier run that never settled it (its worker died, or
   * failed after the call): the provider may have been called, so it must not be called again.
   */
  | { kind: 'held' };

export type SettleOutcome = 'settled' | 'already_settled' | 'not_reserved' | 'missing';

/** The settled truth of a session, from PostgreSQL, that the ledger is rebuilt from. */
export interface CapSnapshot {
  sessionId: string;
  limits: { costMicros: number; calls: number | null; tokens: number | null };
  spent: CapAmounts;
  expiresAt: Date;
  /** Invocations admitted to run and not finished: each may hold (or be about to take) a reservation. */
  inFlight: { invocationId: string; amounts: CapAmounts }[];
}

export interface HeldReservation {
  sessionId: string;
  /** The charge id of a provider attempt (domain/budget/charge-id.ts). */
  invocationId: string;
}

/**
 * The atomic cost caps: per session, reservations of the worst case are taken before a provider
 * call and settled at the real cost after it. Both are atomic and idempotent per charge id (one
 * per provider attempt of an invocation), so any number of workers, retries and crashes never
 * settle more than a cap.
 */
export interface CapLedger {
  reserve(sessionId: string, invocationId: string, amounts: CapAmounts): Promise<ReserveOutcome>;
  /** Moves the reservation to spent at `charged` (never above what was reserved) and drops it. */
  settle(sessionId: string, invocationId: string, charged: CapAmounts): Promise<SettleOutcome>;
  /** Writes the snapshot as the session's state unless some state exists; true when it wrote. */
  restore(snapshot: CapSnapshot): Promise<boolean>;
  /** What each session holds in reservations right now (zero when the ledger has no state). */
  reserved(sessionIds: string[]): Promise<Map<string, CapAmounts>>;
  /** Whether the charge is reserved and not settled; null when the ledger has no state for the session. */
  isHeld(sessionId: string, chargeId: string): Promise<boolean | null>;
  /** Reservations taken more than `olderThanMs` ago and not settled, oldest first. */
  heldLongerThan(olderThanMs: number, limit: number): Promise<HeldReservation[]>;
}
