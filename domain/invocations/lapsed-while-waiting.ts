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
 * The invocation's session is no longer open, the key that asked for it lapsed, or its credential
 * was deleted: it fails, and `notSent` tells the agent what did not happen.
 */
export function lapsedWhileWaiting(view: GuardianView, at: Date, notSent: string): StopAfterWait | null {
  const status = statusAt(view.session, at);
  if (status !== 'open') {
    const message = `session ${view.invocation.sessionId} is ${status}; ${notSent}`;
    const details = { session_id: view.invocation.sessionId, status };
    return { status: 'failed', error: { errorCode: 'session_not_open', message, details } };
  }
  const revoked = lapsedRequesterKey(view, at, notSent);
  if (revoked) return { status: 'failed', error: revoked };
  return view.credential?.sealedSecret ? null : { status: 'failed', error: credentialGone(view, notSent) };
}

/** The error the run would meet (`openCredential`): a deleted credential's secret is gone. */
function credentialGone(view: GuardianView, notSent: string): InvocationError {
  const ref = view.invocation.credentialRef;
  return {
    errorCode: 'credential_not_found',
    message: `credential ${ref} was deleted; ${notSent}`,
    details: { credential_ref: ref },
  };
}
