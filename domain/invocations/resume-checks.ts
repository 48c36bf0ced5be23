import type { Clock } from '../clock';
import type { Guardian } from '../policy/guardian';
import { guardianInput } from './evaluate-invocation';
import { lapsedWhileWaiting, type StopAfterWait } from './lapsed-while-waiting';
import type { Invocation } from './invocation';
import type { InvocationStore } from './invocation-store';
import { decideOnCurrent } from './slow-decision';

export interface ResumeCheckDeps {
  store: InvocationStore;
  guardian: Guardian;
  clock: Clock;
}

/**
 * What the invocation waited for before this call: people's approval, a retry's delay, or its run
 * being started again (its job stopped after the decision, or the reaper enqueued it anew).
 */
export type Wait = 'approval' | 'retry' | 'restart';

const NOT_SENT: Record<Wait, string> = {
  approval: 'the approved request was not run',
  retry: 'the call was not tried again',
  restart: 'it was not run',
};

const SINCE: Record<Wait, string> = {
  approval: 'after its approval',
  retry: 'before its retry',
  restart: 'before it was run',
};

/**
 * An invocation that waited (an approved one, for hours maybe; a retry, for up to a minute after
 * a provider's Retry-After; one whose run started again, after the reaper's few minutes) holds
 * nothing meanwhile, so what operators did meanwhile still counts before it reaches the provider.
 * A session closed or expired ends it as a queued one would end (`session_not_open`); so does its
 * key's revocation or expiry (`invalid_api_key`, `expired_api_key`) and anything the guardian now
 * denies (its agent suspended, a deny policy added, a credential taken off the agent): deny beats
 * an approval as it beats require_approval. Any other verdict sends the request exactly as it was
 * admitted.
 */
export async function stoppedAfterWait(
  deps: ResumeCheckDeps,
  invocation: Invocation,
  wait: Wait,
): Promise<StopAfterWait | null> {
  const view = await deps.store.forGuardian(invocation.id);
  if (!view) return null;
  const before = lapsedWhileWaiting(view, deps.clock.now(), NOT_SENT[wait]);
  if (before) return before;
  const decided = await decideOnCurrent(deps, view, (current) => guardianInput({ ...current, invocation }));
  const { verdict } = decided;
  if (verdict.verdict !== 'deny') return lapsedWhileWaiting(decided.view, decided.at, NOT_SENT[wait]);
  const message = `denied ${SINCE[wait]}: ${verdict.reasons.map((r) => r.message).join('; ')}`;
  return { status: 'denied', error: { errorCode: 'guardian_denied', message } };
}
