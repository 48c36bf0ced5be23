import { isRevoked } from '../keys/build-key';
import type { InvocationError } from './invocation';
import type { GuardianView } from './invocation-store';

/**
 * Revoking a key stops what it asked for and that has not reached the provider yet: a queued
 * invocation, an approved one, a retry. It ends `failed` with the error a request with that key
 * would now get; so does the key's expiry meanwhile (`expired_api_key`). A key rotated away is
 * revoked when its grace ends, not before.
 */
export function lapsedRequesterKey(view: GuardianView, at: Date, notSent: string): InvocationError | null {
  const key = view.invocation.requestedBy.id;
  const { requesterRevokedAt: revokedAt, requesterExpiresAt: expiresAt } = view;
  if (revokedAt !== null && isRevoked({ revokedAt }, at))
    return {
      errorCode: 'invalid_api_key',
      message: `the API key ${key} that requested it was revoked; ${notSent}`,
    };
  if (expiresAt !== null && expiresAt.getTime() <= at.getTime())
    return {
      errorCode: 'expired_api_key',
      message: `the API key ${key} that requested it has expired; ${notSent}`,
    };
  return null;
}
