import { statusAt } from '../sessions/session';
import type { InvocationError } from './invocation';
import type { GuardianView } from './invocation-store';
import { lapsedRequesterKey } from './requester-key';

/** Why an invocation that waited is not sent after all, and how it ends. */
export interface StopAfterWait {
  status: 'failed' | 'denied';
  error: InvocationError;
}

/**
 * The invocation's session is no longer open, or the key that asked for it lapsed: it fails, and
 * `notSent` tells the agent what did not happen.
 */
export function lapsedWhileWaiting(view: GuardianView, at: Date, notSent: string): StopAfterWait | null {
  const status = statusAt(view.session, at);
  if (status !== 'open') {
    const message = `session ${view.invocation.sessionId} is ${status}; ${notSent}`;
    const details = { session_id: view.invocation.sessionId, status };
    return { status: 'failed', error: { errorCode: 'session_not_open', message, details } };
  }
  const revoked = lapsedRequesterKey(view, at, notSent);
  return revoked ? { status: 'failed', error: revoked } : null;
}
