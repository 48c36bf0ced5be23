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
}

/**
 * `POST /v1/llm/invocations/{id}/cancel`: only before the provider is called (queued, evaluating or
 * awaiting approval). The write is conditional, so a cancel racing the guardian has one winner.
 */
export async function cancelInvocation(deps: CancelDeps, ctx: CallContext, id: string): Promise<Invocation> {
  const invocation = await deps.store.get(ctx.principal.orgId, id);
  if (!invocation) throw notFound('invocation');
  const refuse = (status: string) =>
    invalidState(
      status,
      `invocation ${id} is ${status}; only ${CANCELLABLE.join(', ')} invocations can be cancelled`,
    );
  if (!CANCELLABLE.includes(invocation.status)) throw refuse(invocation.status);
  const write = endWithoutUsage(invocation, [...CANCELLABLE], 'cancelled', null, deps.clock.now(), {
    actor: actorOf(ctx.principal),
    requestId: ctx.requestId,
  });
  if ((await recordOutcome(deps, invocation, write)) !== 'applied') {
    const now = await deps.store.get(ctx.principal.orgId, id);
    throw refuse(now?.status ?? 'unknown');
  }
  return applyFinish(invocation, write);
}
