/**
 * Obvious mistakes in a 32-byte master key, which a random key practically never shows. The
 * chance that `npm run master-key:generate` (32 random bytes) trips a rule, computed exactly:
 * - fewer than 12 distinct bytes: 6.4e-26 (2^-83.7);
 * - a repeating pattern of period 16 or less, in the bytes or their differences (which catches
 *   counting sequences): under 2^-119;
 * - only letters, digits, space, '.', '_' and '-' (a passphrase): (66/256)^32 = 1.5e-19 (2^-62.6).
 * In all, about 1.5e-19: a generated key is never refused.
 */
const MIN_DISTINCT = 12;
const MAX_PERIOD = 16;
const TYPED = /^[A-Za-z0-9 ._-]*$/;

const hasPeriod = (values: number[], period: number) =>
  values.every((v, i) => i < period || v === values[i - period]);

const repeats = (values: number[]) =>
  Array.from({ length: MAX_PERIOD }, (_, i) => i + 1).some((p) => hasPeriod(values, p));

const differences = (bytes: number[]) => bytes.slice(1).map((b, i) => (b - (bytes[i] ?? 0) + 256) % 256);

/** Why a 32-byte key is too weak to use, or null. Keys of another length are judged elsewhere. */
export function weakKeyReason(key: Buffer): string | null {
  if (key.length !== 32) return null;
  const bytes = [...key];
  if (new Set(bytes).size < MIN_DISTINCT) return `it has only ${new Set(bytes).size} distinct bytes of 32`;
  if (repeats(bytes) || repeats(differences(bytes))) return 'it is a repeating pattern';
  if (TYPED.test(key.toString('latin1'))) return 'it is typed text, not random bytes';
  return null;
}

/** The refusal an operator reads: what is wrong and what to do. */
export const weakKeyMessage = (reason: string) =>
  `is too weak to encrypt with (${reason}); generate one with \`npm run master-key:generate\``;

/** Throws on an obviously weak key: it would seal every credential and stored response. */
export function assertStrongKey(key: Buffer, name: string): void {
  const reason = weakKeyReason(key);
  if (reason) throw new Error(`${name} ${weakKeyMessage(reason)}`);
}
