import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

interface ScryptParams {
  N: number;
  r: number;
  p: number;
}

/**
 * scrypt is memory-hard: OWASP's advice, N=2^17, r=8, p=1, needs 128 MiB per hash, which makes
 * GPU guessing costly. The parameters are stored with each hash, so hashes made at a lower cost
 * still verify and are replaced on their owner's next login (`needsRehash`).
 */
const PARAMS: ScryptParams = { N: 2 ** 17, r: 8, p: 1 };
const KEY_LENGTH = 32;
/** scrypt needs 128 * N * r bytes; a stored hash asking for more than this is not one of ours. */
const MAX_MEMORY = 512 * 1024 * 1024;

const memoryFor = ({ N, r }: ScryptParams) => 128 * N * r;

function scryptAsync(password: string, salt: Buffer, params: ScryptParams): Promise<Buffer> {
  // Node refuses more than 32 MiB unless told: allow what these parameters need, with room to spare.
  const options: ScryptOptions = { ...params, maxmem: memoryFor(params) * 2 };
  return new Promise((resolve, reject) =>
    scrypt(password, salt, KEY_LENGTH, options, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(password, salt, PARAMS);
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64'), key.toString('base64')].join('$');
}

const isPowerOfTwo = (n: number) => Number.isSafeInteger(n) && n > 1 && (n & (n - 1)) === 0;

/** The parts of a stored hash, or null when it is not a scrypt hash this code could have made. */
function parseHash(stored: string): { params: ScryptParams; salt: string; key: string } | null {
  const [kind, n, r, p, salt, key] = stored.split('$');
  const params = { N: Number(n), r: Number(r), p: Number(p) };
  if (kind !== 'scrypt' || !salt || !key || !isPowerOfTwo(params.N)) return null;
  if (!Number.isSafeInteger(params.r) || params.r < 1 || params.p !== 1) return null;
  return memoryFor(params) <= MAX_MEMORY ? { params, salt, key } : null;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parsed = parseHash(stored);
  if (!parsed) return false;
  const actual = await scryptAsync(password, Buffer.from(parsed.salt, 'base64'), parsed.params);
  const wanted = Buffer.from(parsed.key, 'base64');
  return actual.length === wanted.length && timingSafeEqual(actual, wanted);
}

/** True when a hash was made at a lower cost than today's: replace it once the password is known. */
export function needsRehash(stored: string): boolean {
  const parsed = parseHash(stored);
  if (!parsed) return true;
  const { N, r, p } = parsed.params;
  return N < PARAMS.N || r < PARAMS.r || p < PARAMS.p;
}

/**
 * Checked when the email is unknown, so that a wrong email costs the same time as a wrong
 * password and login timing does not reveal which accounts exist.
 */
let decoy: Promise<string> | undefined;
export const decoyPasswordHash = (): Promise<string> =>
  (decoy ??= hashPassword(randomBytes(16).toString('hex')));
