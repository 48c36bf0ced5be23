import { hashPassword, needsRehash, verifyPassword } from '../../domain/auth/password';
import { legacyPasswordHash } from '../support/legacy-password';

describe('password hashing (scrypt)', () => {
  it('hashes at OWASP cost N=2^17, r=8, p=1 and says so in the stored string', async () => {
    const stored = await hashPassword('correct horse');
    expect(stored).toMatch(/^scrypt\$131072\$8\$1\$[A-Za-z0-9+/=]{24}\$[A-Za-z0-9+/=]{44}$/);
    expect(await verifyPassword('correct horse', stored)).toBe(true);
    expect(await verifyPassword('wrong horse', stored)).toBe(false);
    expect(needsRehash(stored)).toBe(false);
  });

  it('still verifies a hash made at N=2^15, and marks it for a rehash', async () => {
    const old = legacyPasswordHash('correct horse');
    expect(await verifyPassword('correct horse', old)).toBe(true);
    expect(await verifyPassword('wrong horse', old)).toBe(false);
    expect(needsRehash(old)).toBe(true);
  });

  it.each([
    ['an unknown scheme', 'bcrypt$x'],
    ['absurd parameters', `scrypt$${2 ** 30}$8$1$c2FsdA==$a2V5`],
    ['parameters that are not numbers', 'scrypt$many$8$1$c2FsdA==$a2V5'],
    ['a missing key', 'scrypt$16384$8$1$c2FsdA=='],
  ])('refuses %s without trying it', async (_label, stored) => {
    await expect(verifyPassword('pw', stored)).resolves.toBe(false);
  });
});
