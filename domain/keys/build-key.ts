import { generateToken, hashToken, keyPrefixOf } from '../auth/tokens';
import { addDays } from '../clock';
import { newId } from '../ids';
import type { ApiKey } from '../model';
import type { Scope } from '../scopes';

export const KEY_LIFETIME_DAYS = { min: 1, max: 365, default: 90 } as const;

export interface MintedKey {
  key: ApiKey;
  /** The `csk_` secret: returned once, never stored. */
  secret: string;
}

export interface KeySpec {
  orgId: string;
  name: string;
  scopes: Scope[];
  expiresAt: Date;
  createdBy: string | null;
  /** Set for a key returned to the one who minted it (the signup's): see ApiKey.heldByCreator. */
  heldByCreator?: true;
  now: Date;
}

export function buildKey(spec: KeySpec): MintedKey {
  const secret = generateToken('csk_');
  const key: ApiKey = {
    id: newId('key'),
    orgId: spec.orgId,
    name: spec.name,
    prefix: keyPrefixOf(secret),
    secretHash: hashToken(secret),
    scopes: spec.scopes,
    createdAt: spec.now,
    expiresAt: spec.expiresAt,
    lastUsedAt: null,
    revokedAt: null,
    createdBy: spec.createdBy,
    replacedBy: null,
    heldByCreator: spec.heldByCreator ?? false,
  };
  return { key, secret };
}

export const expiryFromDays = (now: Date, days: number): Date => addDays(now, days);

/** A key works until its revocation time (which a rotation's grace may put in the future). */
export const isRevoked = (key: Pick<ApiKey, 'revokedAt'>, now: Date): boolean =>
  key.revokedAt !== null && key.revokedAt.getTime() <= now.getTime();
