import { createHash } from 'node:crypto';
import { canonicalJson } from '../canonical-json';

/**
 * SHA-256 (hex) of the canonical JSON (RFC 8785) of an action, as the contract spells it
 * (snake_case). The decision log keeps this instead of the prompt text: whoever holds the action
 * can prove it was the one decided, and the log itself reveals nothing of it.
 */
export const actionDigest = (action: unknown): string =>
  createHash('sha256').update(canonicalJson(action)).digest('hex');
