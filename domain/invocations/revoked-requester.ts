import { isRevoked } from '../keys/build-key';
import type { InvocationError } from './invocation';
import type { GuardianView } from './invocation-store';

/**
 * Revoking a key stops what it asked for and that has not reached the provider yet: a queued
 * invocation, an approved one, a retry. It ends `failed` with the error a request with that key
 * would now get. (A key rotated away is revoked when its grace ends, not before.)
 */
export function revokedRequester(view: GuardianView, at: Date, notSent: string): InvocationError | null {
  if (view.requesterRevokedAt === null || !isRevoked({ revokedAt: view.requesterRevokedAt }, at)) return null;
  const message = `the API key ${view.invocation.requestedBy.id} that requested it was revoked; ${notSent}`;
  return { errorCode: 'invalid_api_key', message };
}
