import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/**
 * The token an Authorization header presents: a Bearer token, or the password of HTTP Basic (any
 * user name, so a browser's own sign-in prompt opens the dashboard). Null when there is none.
 */
export function presentedToken(header: string | undefined): string | null {
  const [scheme, value] = (header ?? '').trim().split(/\s+/, 2);
  if (!scheme || !value) return null;
  if (scheme.toLowerCase() === 'bearer') return value;
  if (scheme.toLowerCase() !== 'basic') return null;
  const credentials = Buffer.from(value, 'base64').toString('utf8');
  const colon = credentials.indexOf(':');
  return colon < 0 ? null : credentials.slice(colon + 1);
}

/** Compared as SHA-256 digests, so neither the length nor a prefix of the token leaks through timing. */
export const isDashboardToken = (presented: string, expected: string): boolean =>
  timingSafeEqual(digest(presented), digest(expected));
