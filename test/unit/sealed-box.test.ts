import { randomBytes } from 'node:crypto';
import { SealedBox } from '../../infra/crypto/sealed-box';

describe('SealedBox (AES-256-GCM)', () => {
  const master = randomBytes(32);
  const box = new SealedBox(master, 'test');

  it('round-trips and uses a fresh nonce each time', () => {
    const a = box.seal('sk-secret', 'org_1/cred_1');
    expect(a).not.toContain('sk-secret');
    expect(box.seal('sk-secret', 'org_1/cred_1')).not.toBe(a);
    expect(box.open(a, 'org_1/cred_1')).toBe('sk-secret');
  });

  it('refuses a changed ciphertext, another context, another purpose or another key', () => {
    const sealed = box.seal('sk-secret', 'org_1/cred_1');
    const raw = Buffer.from(sealed, 'base64');
    raw[raw.length - 1] = (raw[raw.length - 1] ?? 0) ^ 1;
    expect(() => box.open(raw.toString('base64'), 'org_1/cred_1')).toThrow();
    expect(() => box.open(sealed, 'org_2/cred_1')).toThrow();
    expect(() => new SealedBox(master, 'other').open(sealed, 'org_1/cred_1')).toThrow();
    expect(() => new SealedBox(randomBytes(32), 'test').open(sealed, 'org_1/cred_1')).toThrow();
  });
});
