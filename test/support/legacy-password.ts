import { randomBytes, scryptSync } from 'node:crypto';

/** A password hash as the code before N=2^17 wrote it (N=2^15, r=8, p=1), to test upgrades. */
export function legacyPasswordHash(password: string, N = 2 ** 15): string {
  const salt = randomBytes(16);
  const key = scryptSync(password, salt, 32, { N, r: 8, p: 1, maxmem: 128 * N * 8 * 2 });
  return ['scrypt', N, 8, 1, salt.toString('base64'), key.toString('base64')].join('$');
}
