import { randomBytes } from 'node:crypto';
import { Keyring } from '../../infra/crypto/keyring';
import { weakKeyReason } from '../../infra/crypto/key-strength';

const key = (bytes: number[]) => Buffer.from(bytes);
const text = (s: string) => Buffer.from(s, 'latin1');

describe('master key strength', () => {
  it.each([
    ['all zero', Buffer.alloc(32), /only 1 distinct/],
    ['all one byte', Buffer.alloc(32, 0x41), /only 1 distinct/],
    [
      'two alternating bytes',
      key(Array.from({ length: 32 }, (_, i) => (i % 2 ? 0xff : 0))),
      /only 2 distinct/,
    ],
    ['few distinct bytes', key(Array.from({ length: 32 }, (_, i) => (i * 7) % 11)), /only 11 distinct/],
    // A fixed half of 16 distinct bytes: a random one has fewer than 12 about once in 10,000 runs.
    [
      'a 16-byte half twice',
      Buffer.concat([Buffer.from('f3a91c07d25e84b69e0d4c7a2b18f563', 'hex')].flatMap((h) => [h, h])),
      /repeating/,
    ],
    ['a counting sequence', key(Array.from({ length: 32 }, (_, i) => i)), /repeating/],
    [
      'a counting sequence by 7 from 200',
      key(Array.from({ length: 32 }, (_, i) => (200 + 7 * i) % 256)),
      /repeating/,
    ],
    ['a passphrase', text('my-company master_key.2025 prod!'.replace('!', 'x')), /typed text/],
    // Fixed, not random: a random one has fewer than 12 distinct characters 1.7% of the time, and
    // is then refused for that first (the test below covers random ones).
    ['hex text', text('f3a91c07d25e84b69e0d4c7a2b18f563'), /typed text/],
  ])('refuses %s', (_label, weak, reason) => {
    expect(weak).toHaveLength(32);
    expect(weakKeyReason(weak)).toMatch(reason);
  });

  it('refuses every one of 10,000 random keys written as hex text', () => {
    const hexKeys = Array.from({ length: 10_000 }, () => text(randomBytes(16).toString('hex')));
    expect(hexKeys.filter((k) => weakKeyReason(k) === null)).toEqual([]);
  });

  it('accepts every one of 100,000 random keys', () => {
    const refused = Array.from({ length: 100_000 }, () => randomBytes(32)).filter((k) => weakKeyReason(k));
    expect(refused).toEqual([]);
  });

  it('refuses to build a keyring on a weak current key, and says what to do', () => {
    expect(() => new Keyring(Buffer.alloc(32))).toThrow(
      /master key is too weak.*npm run master-key:generate/,
    );
    expect(new Keyring(randomBytes(32)).all).toHaveLength(1);
  });

  it('still opens with a weak previous key, so data sealed under it can be resealed to a strong one', () => {
    expect(new Keyring(randomBytes(32), [Buffer.alloc(32)]).all).toHaveLength(2);
  });
});
