import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/**
 * AES-256-GCM with a random 96-bit nonce per message. `context` is bound as associated data, so
 * a sealed value moved to another row (another org, ref or purpose) fails to open.
 * Output: base64 of nonce (12) | tag (16) | ciphertext.
 */
export class SealedBox {
  private readonly key: Buffer;

  /** Derives a key per purpose from the master key, so one purpose's key never serves another. */
  constructor(masterKey: Buffer, purpose: string) {
    this.key = Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), `sealed-box:${purpose}`, 32));
  }

  seal(plaintext: string, context: string): string {
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, nonce);
    cipher.setAAD(Buffer.from(context));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return Buffer.concat([nonce, cipher.getAuthTag(), body]).toString('base64');
  }

  /** Throws when the value was changed, sealed under another key, or for another context. */
  open(sealed: string, context: string): string {
    const raw = Buffer.from(sealed, 'base64');
    const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12));
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
  }
}
