import type { Clock } from '../clock';
import type { Guardian } from '../policy/guardian';
import { statusAt } from '../sessions/session';
import { guardianInput } from './evaluate-invocation';
import type { Invocation, InvocationError } from './invocation';
import type { GuardianView, InvocationStore } from './invocation-store';
import { lapsedRequesterKey } from './requester-key';
import { decideFresh } from './slow-decision';

export interface ResumeCheckDeps {
  store: InvocationStore;
  guardian: Guardian;
  clock: Clock;
}

/** Why an invocation that waited is not sent after all, and how it ends. */
export interface StopAfterWait {
  status: 'failed' | 'denied';
  error: InvocationError;
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
  const before = lapsed(view, deps.clock.now(), wait);
  if (before) return before;
  const decided = await decideFresh(deps, view, guardianInput({ ...view, invocation }));
  const { verdict } = decided;
  if (verdict.verdict !== 'deny') return lapsed(decided.view, decided.at, wait);
  const message = `denied ${SINCE[wait]}: ${verdict.reasons.map((r) => r.message).join('; ')}`;
  return { status: 'denied', error: { errorCode: 'guardian_denied', message } };
}

/** The invocation's session is no longer open, or the key that asked for it lapsed: it fails. */
function lapsed(view: GuardianView, at: Date, wait: Wait): StopAfterWait | null {
  const status = statusAt(view.session, at);
  if (status !== 'open') {
    const message = `session ${view.invocation.sessionId} is ${status}; ${NOT_SENT[wait]}`;
    return { status: 'failed', error: { errorCode: 'session_not_open', message } };
  }
  const revoked = lapsedRequesterKey(view, at, NOT_SENT[wait]);
  return revoked ? { status: 'failed', error: revoked } : null;
}
