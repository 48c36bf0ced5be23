import { SYSTEM_ACTOR, type Actor } from '../audit/audit-event';
import { newAuditEvent } from '../audit/new-event';
import type { CapLedger } from '../budget/cap-ledger';
import { activeAgent } from '../agents/active-agent';
import type { StrandedScope } from '../approvals/approval-store';
import { NOTHING, type CapAmounts } from '../budget/charges';
import { addSeconds, type Clock } from '../clock';
import { invalidField, invalidState, notFound } from '../errors';
import { newId } from '../ids';
import type { HistoryItem, InvocationStore } from '../invocations/invocation-store';
import type { Page, PageRequest } from '../model';
import type { UnitOfWork } from '../ports';
import { microsToUsd } from '../pricing/cost';
import { actorOf, type CallContext } from '../principal';
import { SESSION_TTL_SECONDS, statusAt, type Session } from './session';
import type { SessionFilter, SessionStore } from './session-store';

export interface SessionDeps {
  sessions: SessionStore;
  invocations: InvocationStore;
  ledger: CapLedger;
  uow: UnitOfWork;
  clock: Clock;
  /** The org cap: no session may allow more (CP_MAX_SESSION_COST_USD). */
  maxSessionCostMicros: number;
  /** Withdraws the approvals the closed session's invocations wait on (`withdrawStranded`). */
  withdrawApprovals(scope: StrandedScope, by: Actor, requestId: string | null): Promise<void>;
}

export interface OpenSessionInput {
  agentId?: string | undefined;
  maxCostMicros: number;
  maxCalls?: number | undefined;
  maxTokens?: number | undefined;
  ttlSeconds?: number | undefined;
  metadata?: Record<string, unknown> | undefined;
}

/** A session as read: its status as of now, and what its in-flight invocations hold. */
export interface SessionView {
  session: Session;
  reserved: CapAmounts;
}

const sessionEvent = (session: Session, action: string, actor: Actor, at: Date, requestId: string | null) =>
  newAuditEvent({
    orgId: session.orgId,
    actor,
    action,
    resource: { type: 'session', id: session.id },
    at,
    requestId,
    details: {
      agent_id: session.agentId,
      max_cost_usd: microsToUsd(session.limits.maxCostMicros),
      max_calls: session.limits.maxCalls,
      max_tokens: session.limits.maxTokens,
      cost_usd: microsToUsd(session.usage.costMicros),
      calls: session.usage.calls,
      expires_at: session.expiresAt.toISOString(),
    },
  });

async function checkAgent(deps: SessionDeps, orgId: string, agentId: string): Promise<void> {
  activeAgent(await deps.uow.read((tx) => tx.agents.get(orgId, agentId)), 'opening sessions for it');
}

export async function openSession(
  deps: SessionDeps,
  ctx: CallContext,
  input: OpenSessionInput,
): Promise<SessionView> {
  const orgId = ctx.principal.orgId;
  if (input.maxCostMicros > deps.maxSessionCostMicros)
    throw invalidField(
      'max_cost_usd',
      `max_cost_usd: at most ${microsToUsd(deps.maxSessionCostMicros)} (the org's session cap)`,
    );
  if (input.agentId) await checkAgent(deps, orgId, input.agentId);
  const now = deps.clock.now();
  const session: Session = {
    id: newId('ses'),
    orgId,
    agentId: input.agentId ?? null,
    status: 'open',
    limits: {
      maxCostMicros: input.maxCostMicros,
      maxCalls: input.maxCalls ?? null,
      maxTokens: input.maxTokens ?? null,
    },
    usage: { costMicros: 0, calls: 0, inputTokens: 0, outputTokens: 0 },
    metadata: input.metadata ?? {},
    createdBy: ctx.principal.id,
    createdAt: now,
    expiresAt: addSeconds(now, input.ttlSeconds ?? SESSION_TTL_SECONDS.default),
    closedAt: null,
  };
  await deps.sessions.add(
    session,
    sessionEvent(session, 'session.opened', actorOf(ctx.principal), now, ctx.requestId),
  );
  return { session, reserved: NOTHING };
}

async function withLiveUsage(deps: SessionDeps, sessions: Session[]): Promise<SessionView[]> {
  const now = deps.clock.now();
  // Closed and expired sessions may still hold reservations: their running invocations settle.
  const held = await deps.ledger.reserved(sessions.map((s) => s.id));
  return sessions.map((s) => ({
    session: { ...s, status: statusAt(s, now) },
    reserved: held.get(s.id) ?? NOTHING,
  }));
}

async function loadSession(deps: SessionDeps, ctx: CallContext, id: string): Promise<Session> {
  const session = await deps.sessions.get(ctx.principal.orgId, id);
  if (!session) throw notFound('session');
  return session;
}

export async function getSession(deps: SessionDeps, ctx: CallContext, id: string): Promise<SessionView> {
  const [view] = await withLiveUsage(deps, [await loadSession(deps, ctx, id)]);
  return view as SessionView;
}

export async function listSessions(
  deps: SessionDeps,
  ctx: CallContext,
  filter: SessionFilter,
  page: PageRequest,
): Promise<Page<SessionView>> {
  const found = await deps.sessions.list(ctx.principal.orgId, filter, page, deps.clock.now());
  return { items: await withLiveUsage(deps, found.items), nextAfter: found.nextAfter };
}

/**
 * Closing stops new invokes at once; invocations already running still finish and are charged.
 * Those waiting on an approval can no longer run: their approvals are withdrawn.
 */
export async function closeSession(deps: SessionDeps, ctx: CallContext, id: string): Promise<SessionView> {
  const now = deps.clock.now();
  const closed = await deps.sessions.close(ctx.principal.orgId, id, now, (s) =>
    sessionEvent(s, 'session.closed', actorOf(ctx.principal), now, ctx.requestId),
  );
  if (!closed) {
    const session = await loadSession(deps, ctx, id);
    const status = statusAt(session, now);
    throw invalidState(status, `session ${id} is ${status}; only an open session can be closed`);
  }
  await deps.withdrawApprovals({ orgId: closed.orgId, sessionId: id }, actorOf(ctx.principal), ctx.requestId);
  const [view] = await withLiveUsage(deps, [closed]);
  return view as SessionView;
}

/** The session's invocations and decisions, oldest first. */
export async function sessionHistory(
  deps: SessionDeps,
  ctx: CallContext,
  id: string,
  page: { limit: number; after: { at: Date; id: string } | null },
): Promise<{ items: HistoryItem[]; next: { at: Date; id: string } | null }> {
  await loadSession(deps, ctx, id);
  return deps.invocations.history(ctx.principal.orgId, id, page);
}

/** The sweeper: records sessions past their expiry as expired, each with an audit entry. */
export const expireSessions = (deps: Pick<SessionDeps, 'sessions' | 'clock'>): Promise<number> => {
  const now = deps.clock.now();
  return deps.sessions.expireDue(now, 500, (s) =>
    sessionEvent(s, 'session.expired', SYSTEM_ACTOR, now, null),
  );
};
