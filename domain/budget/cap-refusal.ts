import { DomainError } from '../errors';
import { microsToUsd } from '../pricing/cost';
import type { CapName, CapSnapshot } from './cap-ledger';
import type { CapAmounts } from './charges';

/** The amount each cap counts. */
export const CAP_FIELDS: Record<CapName, keyof CapAmounts> = {
  cost: 'costMicros',
  calls: 'calls',
  tokens: 'tokens',
};

/** Why a call does not fit a session, in the contract's units (USD for the cost cap). */
export interface CapRefusal {
  cap: CapName;
  /** The cap itself. */
  limit: number;
  /** What is left of it once settled usage and the reservations of calls in flight are counted. */
  remaining: number;
  /** What this call would hold against it: its worst case. */
  needed: number;
}

/** A refusal counted in the ledger's units (micro-dollars for cost), as the contract states it. */
export const inContractUnits = (r: CapRefusal): CapRefusal =>
  r.cap === 'cost'
    ? {
        ...r,
        limit: microsToUsd(r.limit),
        remaining: microsToUsd(r.remaining),
        needed: microsToUsd(r.needed),
      }
    : r;

const amount = (cap: CapName, n: number): string =>
  cap === 'cost' ? `$${n}` : cap === 'calls' ? `${n} call${n === 1 ? '' : 's'}` : `${n} tokens`;

/** What a refusal says: which cap, what the call needed, what remained, and what to do. */
export function refusalMessage(r: CapRefusal): string {
  const fix =
    r.cap === 'calls'
      ? 'open a new session to continue'
      : 'lower max_tokens or the prompt, or open a session with a larger cap';
  return (
    `the session's ${r.cap} cap would be crossed: this call needs up to ${amount(r.cap, r.needed)} ` +
    `(its worst case) and ${amount(r.cap, r.remaining)} of ${amount(r.cap, r.limit)} remains ` +
    `(calls in flight count at their worst case until they settle); ${fix}`
  );
}

/** The contract's fields of a 402 budget_exceeded: the session, the cap, its limit, what remains and what was needed. */
export const refusalDetails = (sessionId: string, r: CapRefusal) => ({
  session_id: sessionId,
  cap: r.cap,
  limit: r.limit,
  remaining: r.remaining,
  needed: r.needed,
});

/** 402 budget_exceeded with the session, the cap, its limit, what remains and what was needed. */
export const budgetExceeded = (sessionId: string, r: CapRefusal): DomainError =>
  new DomainError(
    'budget_exceeded',
    `session ${sessionId}: ${refusalMessage(r)}`,
    refusalDetails(sessionId, r),
  );

/**
 * Which cap a settled charge crossed, counted against settled usage only (what the database's cap
 * constraints check), in the ledger's units; null when none does (the caps changed since).
 */
export function crossedBySettling(snapshot: CapSnapshot, charge: CapAmounts): CapRefusal | null {
  const limits: Record<CapName, number | null> = {
    cost: snapshot.limits.costMicros,
    calls: snapshot.limits.calls,
    tokens: snapshot.limits.tokens,
  };
  for (const cap of ['cost', 'calls', 'tokens'] as const) {
    const limit = limits[cap];
    const field = CAP_FIELDS[cap];
    if (limit !== null && snapshot.spent[field] + charge[field] > limit)
      return { cap, limit, remaining: Math.max(0, limit - snapshot.spent[field]), needed: charge[field] };
  }
  return null;
}

/** What a charge the database refused says (see `crossedBySettling`). */
export const settlingRefusalMessage = (r: CapRefusal): string =>
  `the session's ${r.cap} cap would be crossed: this call's charge of ${amount(r.cap, r.needed)} is more than ` +
  `the ${amount(r.cap, r.remaining)} of ${amount(r.cap, r.limit)} that remains; it was charged nothing`;
