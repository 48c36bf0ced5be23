import { createHash, randomBytes } from 'node:crypto';

/** `csk_` API keys, `css_` dashboard sessions, `cit_` invite tokens. */
export type TokenPrefix = 'csk_' | 'css_' | 'cit_';

/** 32 random bytes (256 bits), base64url: far above the 128 bits the threat model needs. */
export const generateToken = (prefix: TokenPrefix): string => prefix + randomBytes(32).toString('base64url');

/**
 * Tokens are random, so a fast hash is enough to make a stolen table useless (no dictionary
 * to try) while keeping the per-request lookup cheap.
 */
export const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');

export const TOKEN_SHAPE = /^(csk|css|cit)_[A-Za-z0-9_-]{43}$/;

/** What a client can use later to recognise a key without the secret. */
export const keyPrefixOf = (secret: string): string => secret.slice(0, 12);
