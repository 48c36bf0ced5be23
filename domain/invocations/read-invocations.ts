import { notFound } from '../errors';
import type { Page } from '../model';
import type { CallContext } from '../principal';
import type { Invocation, InvocationSummary } from './invocation';
import { isTerminal } from './lifecycle';
import type { InvocationFilter, InvocationStore } from './invocation-store';
import type { CompletionWaiter, WaitResult } from './signals';

/**
 * Waits on an already registered waiter. The signal usually carries the finished invocation; when
 * it does not (too large to broadcast), or the wait ran out, the row is read once: no poll loop.
 */
export async function awaitFinished(
  store: InvocationStore,
  invocation: Invocation,
  waiting: { result: Promise<WaitResult> },
): Promise<InvocationSummary> {
  const result = await waiting.result;
  if (result.kind === 'finished' && result.invocation) return result.invocation;
  return (await store.get(invocation.orgId, invocation.id)) ?? invocation;
}

export interface ReadDeps {
  store: InvocationStore;
  waiter: CompletionWaiter;
  /** Expires an approval past its time that nothing has recorded yet; true when it did. */
  expireOverdue?: (orgId: string, approvalId: string) => Promise<boolean>;
}

/** The invocation as it stands once an approval it waits on past its time has been expired. */
async function settled(deps: ReadDeps, found: Invocation): Promise<Invocation> {
  if (found.status !== 'awaiting_approval' || !found.approvalId || !deps.expireOverdue) return found;
  if (!(await deps.expireOverdue(found.orgId, found.approvalId))) return found;
  return (await deps.store.get(found.orgId, found.id)) ?? found;
}

/** `GET /v1/llm/invocations/{id}`, with an optional long poll until it finishes or `waitMs` passes. */
export async function getInvocation(
  deps: ReadDeps,
  ctx: CallContext,
  id: string,
  waitMs: number,
  /** Throws if the invocation found may not be waited for by this caller (a chat resume's session). */
  accept: (found: Invocation) => void | Promise<void> = () => undefined,
): Promise<InvocationSummary> {
  const orgId = ctx.principal.orgId;
  // Registered before the read, so a finish between the two is not missed.
  const waiting = waitMs > 0 ? deps.waiter.wait(id, waitMs) : null;
  const current = await deps.store
    .get(orgId, id)
    .then(async (found) => {
      if (!found) return null;
      await accept(found);
      return settled(deps, found);
    })
    .catch((err: unknown) => {
      waiting?.cancel();
      throw err;
    });
  if (!current || isTerminal(current.status) || !waiting) {
    waiting?.cancel();
    if (!current) throw notFound('invocation');
    return current;
  }
  return awaitFinished(deps.store, current, waiting);
}

export const listInvocations = (
  store: InvocationStore,
  ctx: CallContext,
  filter: InvocationFilter,
  page: { limit: number; after: string | null },
): Promise<Page<Invocation>> => store.list(ctx.principal.orgId, filter, page);
