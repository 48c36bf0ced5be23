import type { Clock } from '../clock';
import { DomainError, notFound } from '../errors';
import { newId } from '../ids';
import type { CompletionWaiter } from '../invocations/signals';
import type { UnitOfWork } from '../ports';
import { actorOf, type CallContext } from '../principal';
import { assertSessionAgent } from '../sessions/session';
import type { SessionStore } from '../sessions/session-store';
import type { Decision } from './decision';
import type { EvaluationRelay } from './evaluation';
import type { Action } from './policy';

export interface SubmitEvaluationDeps {
  uow: UnitOfWork;
  sessions: SessionStore;
  relay: EvaluationRelay;
  enqueue(job: { evaluation_id: string; org_id: string; trace: Record<string, string> }): Promise<void>;
  waiter: CompletionWaiter;
  clock: Clock;
  /** How long the API waits for a guardian worker before it withdraws the request (see withdrawOrWaitClaimed). */
  waitMs: number;
}

export interface EvaluationInput {
  agentId: string | null;
  sessionId: string | null;
  action: Action;
}

/**
 * The agent named, else the session's; both must be the caller's org's, and a session with an
 * agent acts for that agent only (as on invoke).
 */
async function contextOf(deps: SubmitEvaluationDeps, orgId: string, input: EvaluationInput) {
  const session = input.sessionId ? await deps.sessions.get(orgId, input.sessionId) : null;
  if (input.sessionId && !session) throw notFound('session');
  if (session) assertSessionAgent(session, input.agentId);
  const agentId = input.agentId ?? session?.agentId ?? null;
  const agent = agentId ? await deps.uow.read((tx) => tx.agents.get(orgId, agentId)) : null;
  if (agentId && !agent) throw notFound('agent');
  const gate = agent
    ? {
        id: agent.id,
        status: agent.status,
        allowedModels: agent.allowedModels,
        credentialRefs: agent.credentialRefs,
      }
    : null;
  return { agentId, sessionId: input.sessionId, agent: gate };
}

/**
 * `POST /v1/acs/evaluate`: the action goes through the guardian queue, as every decision does,
 * and the caller is answered when a worker has decided it (the decision and its audit entry are
 * written by then). Only the evaluation's id travels in the job. A 503 means nothing was recorded,
 * except in the rare case its message names (a worker that died while recording).
 */
export async function submitEvaluation(
  deps: SubmitEvaluationDeps,
  ctx: CallContext,
  input: EvaluationInput,
  trace: Record<string, string>,
): Promise<Decision> {
  const orgId = ctx.principal.orgId;
  const context = await contextOf(deps, orgId, input);
  const id = newId('dec');
  const waiting = deps.waiter.wait(id, deps.waitMs);
  try {
    await deps.relay.put({
      id,
      orgId,
      ...context,
      action: input.action,
      requestedBy: actorOf(ctx.principal),
      requestId: ctx.requestId,
    });
    await deps.enqueue({ evaluation_id: id, org_id: orgId, trace });
  } catch (err) {
    waiting.cancel();
    throw err;
  }
  await waiting.result;
  // A lost signal costs only the wait: the answer, if there is one, is read either way.
  return (await deps.relay.answered(id)) ?? (await withdrawOrWaitClaimed(deps, id));
}

/**
 * How much longer the API waits for a request a worker claimed before the wait ran out. A worker
 * claims once the engine has decided, so what is left is one write to the decision log and the
 * answer in Redis: milliseconds, seconds on a database under load.
 */
export const CLAIMED_GRACE_MS = 5_000;

/**
 * The wait ran out. A request no worker claimed is withdrawn: no worker can record it now, so the
 * 503 is honest and a retry is safe. One claimed is being recorded: its answer is awaited a little
 * longer (CLAIMED_GRACE_MS). Only a worker that claimed and then died or stalled (its process
 * killed, or its write slower than the grace) outlasts that; its job is taken up again once its
 * lock lapses (CP_JOB_LOCK_MS) and records the decision then, so that 503 names the decision to
 * look for instead of promising nothing was recorded.
 */
async function withdrawOrWaitClaimed(deps: SubmitEvaluationDeps, id: string): Promise<Decision> {
  // Registered before the withdrawal, so an answer in between is not missed.
  const grace = deps.waiter.wait(id, CLAIMED_GRACE_MS);
  try {
    if (await deps.relay.withdraw(id))
      throw new DomainError(
        'unavailable',
        'the guardian did not decide in time and nothing was recorded; retry the evaluation',
      );
    const answer = await deps.relay.answered(id);
    if (answer) return answer;
    await grace.result;
    const late = await deps.relay.answered(id);
    if (late) return late;
    throw new DomainError(
      'unavailable',
      `the guardian took the evaluation but did not answer in time; it may still record it: ` +
        `look for GET /v1/acs/decisions/${id} before you retry the evaluation`,
    );
  } finally {
    grace.cancel();
  }
}
