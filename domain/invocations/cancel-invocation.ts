import type { Actor } from '../audit/audit-event';
import type { Clock } from '../clock';
import { invalidState, notFound } from '../errors';
import { actorOf, type CallContext } from '../principal';
import type { Invocation } from './invocation';
import { CANCELLABLE } from './lifecycle';
import type { InvocationStore } from './invocation-store';
import { applyFinish, endWithoutUsage, recordOutcome } from './outcomes';
import type { CompletionSignal } from './signals';

export interface CancelDeps {
  store: InvocationStore;
  signal: CompletionSignal;
  clock: Clock;
  /**
   * Cancels a paused invocation through its approval, under the approval's lock (so a vote and a
   * cancel have one winner); true when this call cancelled it.
   */
  cancelApproval(orgId: string, approvalId: string, by: Actor, requestId: string | null): Promise<boolean>;
}

/** Before its decision: the invocation row alone. A paused one goes through its approval. */
const WITHOUT_APPROVAL = CANCELLABLE.filter((s) => s !== 'awaiting_approval');

/**
 * `POST /v1/llm/invocations/{id}/cancel`: only before the provider is called (queued, evaluating or
 * awaiting approval). The write is conditional, so a cancel racing the guardian has one winner;
 * cancelling a paused invocation cancels its approval in the same transaction.
 */
export async function cancelInvocation(deps: CancelDeps, ctx: CallContext, id: string): Promise<Invocation> {
  const orgId = ctx.principal.orgId;
  const invocation = await deps.store.get(orgId, id);
  if (!invocation) throw notFound('invocation');
  const refuse = (status: string) =>
    invalidState(
      status,
      `invocation ${id} is ${status}; only ${CANCELLABLE.join(', ')} invocations can be cancelled`,
    );
  if (!CANCELLABLE.includes(invocation.status)) throw refuse(invocation.status);
  const by = actorOf(ctx.principal);
  if (invocation.status !== 'awaiting_approval') {
    const write = endWithoutUsage(invocation, WITHOUT_APPROVAL, 'cancelled', null, deps.clock.now(), {
      actor: by,
      requestId: ctx.requestId,
    });
    if ((await recordOutcome(deps, invocation, write)) === 'applied') return applyFinish(invocation, write);
  }
  // Paused now (or since the read: the guardian decided meanwhile).
  const now = await deps.store.get(orgId, id);
  if (now?.status === 'awaiting_approval' && now.approvalId) {
    if (await deps.cancelApproval(orgId, now.approvalId, by, ctx.requestId))
      return (await deps.store.get(orgId, id)) ?? now;
  }
  throw refuse((await deps.store.get(orgId, id))?.status ?? 'unknown');
}
