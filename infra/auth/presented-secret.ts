import { createHash, timingSafeEqual } from 'node:crypto';

/** The token of `Authorization: Bearer <token>`; null when there is none or the header has another shape. */
export const bearerToken = (header: string | undefined): string | null =>
  /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')?.[1] ?? null;

/** The password of `Authorization: Basic <base64 user:password>` (any user name); null otherwise. */
export function basicPassword(header: string | undefined): string | null {
  const encoded = /^Basic\s+(\S+)\s*$/i.exec(header ?? '')?.[1];
  if (!encoded) return null;
  const credentials = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = credentials.indexOf(':');
  return colon < 0 ? null : credentials.slice(colon + 1);
}

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/**
 * Whether a presented secret is the configured one (an operator's token), compared as SHA-256
 * digests: neither its length nor a matching prefix shows in the time taken.
 */
export const isSameSecret = (presented: string, expected: string): boolean =>
  timingSafeEqual(digest(presented), digest(expected));
