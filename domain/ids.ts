import { randomBytes } from 'node:crypto';

export type IdPrefix =
  'org' | 'usr' | 'key' | 'cred' | 'agt' | 'ses' | 'inv' | 'dec' | 'pol' | 'apr' | 'aud' | 'uss' | 'ivt';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

/** Base-36 text of random bytes; 1 character carries about 5.17 bits. */
export function randomText(length: number): string {
  const bytes = randomBytes(length);
  let out = '';
  for (const b of bytes) out += ALPHABET[b % 36];
  return out;
}

/**
 * Opaque identifiers with a type prefix. The time part makes them roughly sortable, which keeps
 * index inserts local; clients must not rely on it.
 */
export const newId = (prefix: IdPrefix): string =>
  `${prefix}_${Date.now().toString(36).padStart(9, '0')}${randomText(16)}`;
