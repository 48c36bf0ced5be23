import { randomBytes } from 'node:crypto';

export type IdPrefix =
  | 'org'
  | 'usr'
  | 'key'
  | 'cred'
  | 'agt'
  | 'ses'
  | 'inv'
  | 'dec'
  | 'pol'
  | 'apr'
  | 'aud'
  | 'uss'
  | 'ivt'
  | 'whk'
  | 'msg';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

/**
 * Random bytes are drawn 4 KiB at a time: one call into the CSPRNG serves hundreds of ids, where a
 * call per id showed up in profiles of the invoke path. The bytes are as random either way.
 */
const POOL_SIZE = 4096;
let pool = Buffer.alloc(0);
let offset = 0;

function takeRandom(length: number): Buffer {
  if (length > POOL_SIZE) return randomBytes(length);
  if (offset + length > pool.length) {
    pool = randomBytes(POOL_SIZE);
    offset = 0;
  }
  const bytes = pool.subarray(offset, offset + length);
  offset += length;
  return bytes;
}

/** Base-36 text of random bytes; 1 character carries about 5.17 bits. */
export function randomText(length: number): string {
  const bytes = takeRandom(length);
  let out = '';
  for (const b of bytes) out += ALPHABET[b % 36];
  return out;
}

/**
 * Opaque identifiers with a type prefix. The time part makes them roughly sortable, which keeps
 * index inserts local; clients must not rely on it.
 */
export const newId = (prefix: IdPrefix): string => `${firstIdAt(prefix, new Date())}${randomText(16)}`;

/** The time part of the ids made at `at`: every id made earlier sorts before it (for range scans). */
export const firstIdAt = (prefix: IdPrefix, at: Date): string =>
  `${prefix}_${at.getTime().toString(36).padStart(9, '0')}`;
