import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import type { Keyring } from '../../infra/crypto/keyring';

// A purpose of its own, so this key opens nothing else the master key protects.
const PURPOSE = 'approvals-page-csrf-v1';

const hmac = (key: Buffer, sessionToken: string): Buffer =>
  createHmac('sha256', key).update(sessionToken).digest();

/**
 * The page's CSRF tokens: an HMAC of the session token under a key derived from the master key.
 * A script on another site can neither read the token nor compute it; a token works only with the
 * session it was made for. Tokens made under a previous master key still verify until it is dropped.
 */
export class CsrfTokens {
  private readonly keys: Buffer[];

  constructor(keyring: Keyring) {
    this.keys = keyring.all.map((k) => Buffer.from(hkdfSync('sha256', k.key, Buffer.alloc(0), PURPOSE, 32)));
  }

  issue(sessionToken: string): string {
    return hmac(this.keys[0] as Buffer, sessionToken).toString('base64url');
  }

  verify(sessionToken: string, presented: string): boolean {
    const given = Buffer.from(presented, 'base64url');
    // base64url decoding skips stray characters: a token must round-trip to be the one issued.
    if (given.toString('base64url') !== presented) return false;
    return this.keys.some((key) => {
      const expected = hmac(key, sessionToken);
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
  }
}
