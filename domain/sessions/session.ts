import { budgetExceeded, inContractUnits, type CapRefusal } from '../budget/cap-refusal';
import type { CapAmounts } from '../budget/charges';
import type { CapName } from '../budget/cap-ledger';
import { DomainError, invalidField } from '../errors';

/** `expired` is stored by a sweeper, but a session is expired the moment `expiresAt` passes. */
export type SessionStatus = 'open' | 'closed' | 'expired';

export interface SessionLimits {
  maxCostMicros: number;
  /** Invokes that reached the provider; null: no limit. */
  maxCalls: number | null;
  /** Input plus output tokens over the whole session; null: no limit. */
  maxTokens: number | null;
}

/** Settled usage: what finished invocations were charged. */
export interface SessionUsage {
  costMicros: number;
  calls: number;
  inputTokens: number;
  outputTokens: number;
}

/** A bounded, cost-capped session that invocations run in. */
export interface Session {
  id: string;
  orgId: string;
  agentId: string | null;
  status: SessionStatus;
  limits: SessionLimits;
  usage: SessionUsage;
  metadata: Record<string, unknown>;
  createdBy: string;
  createdAt: Date;
  expiresAt: Date;
  closedAt: Date | null;
}

export const SESSION_TTL_SECONDS = { min: 60, max: 604_800, default: 3600 } as const;

/** The status as of `now`: an open session past its expiry is expired, whether or not it was swept. */
export const statusAt = (session: Pick<Session, 'status' | 'expiresAt'>, now: Date): SessionStatus =>
  session.status === 'open' && session.expiresAt.getTime() <= now.getTime() ? 'expired' : session.status;

export const sessionNotOpen = (id: string, status: SessionStatus): DomainError =>
  new DomainError('session_not_open', `session ${id} is ${status}; open a new session`, {
    session_id: id,
    status,
  });

/** Refuses a session that is closed or past its expiry (409 session_not_open). */
export function assertOpen(session: Session, now: Date): void {
  const status = statusAt(session, now);
  if (status !== 'open') throw sessionNotOpen(session.id, status);
}

/**
 * 402 budget_exceeded before anything is written: the worst case of the call (`need`) does not
 * fit what the session has left once settled usage and the reservations `held` by calls in flight
 * are counted. A fast pre-check only: the worker's atomic reservation stays the guarantee.
 */
export function assertFits(session: Session, held: CapAmounts, need: CapAmounts): void {
  const refusal = capRefusal(session, held, need);
  if (refusal) throw budgetExceeded(session.id, refusal);
}

/** The first cap that `need` does not fit under, next to settled usage and what is `held`. */
export function capRefusal(session: Session, held: CapAmounts, need: CapAmounts): CapRefusal | null {
  const { limits, usage } = session;
  const caps: [CapName, number | null, number, number][] = [
    ['cost', limits.maxCostMicros, usage.costMicros + held.costMicros, need.costMicros],
    ['calls', limits.maxCalls, usage.calls + held.calls, need.calls],
    ['tokens', limits.maxTokens, usage.inputTokens + usage.outputTokens + held.tokens, need.tokens],
  ];
  for (const [cap, limit, used, needed] of caps) {
    if (limit !== null && used + needed > limit)
      return inContractUnits({ cap, limit, remaining: Math.max(0, limit - used), needed });
  }
  return null;
}

/**
 * A request naming both an agent and a session: the session's agent, if it has one, must be that
 * agent (400 validation_error on agent_id otherwise). Invoke and evaluate both hold to it.
 */
export function assertSessionAgent(
  session: Pick<Session, 'id' | 'agentId'>,
  agentId: string | null | undefined,
): void {
  if (agentId && session.agentId && agentId !== session.agentId)
    throw invalidField('agent_id', `agent_id: session ${session.id} belongs to agent ${session.agentId}`);
}
