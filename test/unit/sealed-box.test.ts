import { randomBytes } from 'node:crypto';
import { legacySealingContext, sealingContext } from '../../domain/credentials/credential-use-cases';
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

describe('a credential secret sealed with its sealing context', () => {
  const box = new SealedBox(randomBytes(32), 'credentials');
  const stored = {
    ref: 'cred_1',
    provider: 'openai_compatible',
    baseUrl: 'https://llm.example/v1',
    version: 3,
  };
  const sealed = box.seal('sk-secret', sealingContext('org_1', stored));

  it('opens only for the provider, base_url and version it was stored with', () => {
    expect(box.open(sealed, sealingContext('org_1', { ...stored }))).toBe('sk-secret');
    for (const moved of [
      { provider: 'openai' },
      { baseUrl: 'https://evil.example/v1' },
      { baseUrl: null },
      { version: 2 },
      { ref: 'cred_2' },
    ])
      expect(() => box.open(sealed, sealingContext('org_1', { ...stored, ...moved }))).toThrow();
    expect(() => box.open(sealed, sealingContext('org_2', stored))).toThrow();
    expect(() => box.open(sealed, legacySealingContext('org_1', 'cred_1'))).toThrow();
  });

  it('keeps each field apart: no value can pass for a neighbour', () => {
    const a = sealingContext('org_1', { ref: 'cred_1', provider: 'mock', baseUrl: null, version: 1 });
    const b = sealingContext('org_1', { ref: 'cred_1', provider: 'mock', baseUrl: 'null', version: 1 });
    const c = sealingContext('org_1\ncred_1', { ref: '', provider: 'mock', baseUrl: null, version: 1 });
    expect(new Set([a, b, c, legacySealingContext('org_1', 'cred_1')]).size).toBe(4);
  });
});
