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
  /** How long the API waits for a guardian worker before answering 503. */
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
 * written by then). Only the evaluation's id travels in the job.
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
  const answer = await deps.relay.answered(id);
  if (!answer)
    throw new DomainError('unavailable', 'the guardian did not decide in time; retry the evaluation');
  return answer;
}
