import { configure } from 'safe-stable-stringify';

const stringify = configure({ deterministic: true, strict: true });

/**
 * The canonical JSON of a JSON value (RFC 8785): keys sorted by UTF-16 code units, no whitespace,
 * numbers and strings as ECMAScript writes them. What every hash and digest of ours covers (audit
 * entries, decision records, AGBOM serials, idempotent requests).
 *
 * safe-stable-stringify, not the `canonicalize` package it replaced: the same bytes for every JSON
 * value (a property test holds it to `canonicalize`), at half the time and half the allocation.
 * The audit seal hashes hundreds of entries at once, and that allocation was a fifth of a worker's
 * per invoke. `strict` throws where RFC 8785 has no form (NaN, Infinity, bigint, functions,
 * symbols, cycles) instead of writing something a verifier could not reproduce.
 */
export function canonicalJson(value: unknown): string {
  return stringify(value) ?? '';
}
