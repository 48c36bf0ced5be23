import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * scrypt is memory-hard: N=2^15, r=8 needs 32 MiB per hash, which makes GPU guessing costly.
 * The parameters are stored with each hash so they can be raised later.
 */
const PARAMS = { N: 2 ** 15, r: 8, p: 1 } as const;
const KEY_LENGTH = 32;

function scryptAsync(
  password: string,
  salt: Buffer,
  params: { N: number; r: number; p: number },
): Promise<Buffer> {
  const options: ScryptOptions = { ...params, maxmem: 128 * params.N * params.r * 2 };
  return new Promise((resolve, reject) =>
    scrypt(password, salt, KEY_LENGTH, options, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(password, salt, PARAMS);
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64'), key.toString('base64')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [kind, n, r, p, salt, expected] = stored.split('$');
  if (kind !== 'scrypt' || !salt || !expected) return false;
  const params = { N: Number(n), r: Number(r), p: Number(p) };
  const actual = await scryptAsync(password, Buffer.from(salt, 'base64'), params);
  const wanted = Buffer.from(expected, 'base64');
  return actual.length === wanted.length && timingSafeEqual(actual, wanted);
}

/**
 * Checked when the email is unknown, so that a wrong email costs the same time as a wrong
 * password and login timing does not reveal which accounts exist.
 */
let decoy: Promise<string> | undefined;
export const decoyPasswordHash = (): Promise<string> =>
  (decoy ??= hashPassword(randomBytes(16).toString('hex')));
