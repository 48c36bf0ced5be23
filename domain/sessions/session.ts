import { DomainError } from '../errors';
import { microsToUsd } from '../pricing/cost';

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

type CapName = 'cost' | 'calls' | 'tokens';

/** The first cap the settled usage has already reached, with what the 402 says about it. */
export function reachedCap(session: Session): { cap: CapName; limit: number; remaining: number } | null {
  const { limits, usage } = session;
  if (usage.costMicros >= limits.maxCostMicros)
    return { cap: 'cost', limit: microsToUsd(limits.maxCostMicros), remaining: 0 };
  if (limits.maxCalls !== null && usage.calls >= limits.maxCalls)
    return { cap: 'calls', limit: limits.maxCalls, remaining: 0 };
  const tokens = usage.inputTokens + usage.outputTokens;
  if (limits.maxTokens !== null && tokens >= limits.maxTokens)
    return { cap: 'tokens', limit: limits.maxTokens, remaining: 0 };
  return null;
}

/** 402 budget_exceeded before anything is written: the session cannot take another call. */
export function assertNotExhausted(session: Session): void {
  const reached = reachedCap(session);
  if (!reached) return;
  throw new DomainError(
    'budget_exceeded',
    `session ${session.id} has reached its ${reached.cap} cap; open a new session to continue`,
    { session_id: session.id, cap: reached.cap, limit: reached.limit, remaining: reached.remaining },
  );
}
