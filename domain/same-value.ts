import { canonicalJson } from './canonical-json';

/** Equal as data (RFC 8785 canonical JSON): key order does not count, so a no-op change is seen as one. */
export const sameValue = (a: unknown, b: unknown): boolean => canonicalJson(a) === canonicalJson(b);
