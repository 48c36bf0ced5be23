import { createHash, hkdfSync } from 'node:crypto';
import type { SecretSealer } from '../../domain/ports';
import { assertStrongKey } from './key-strength';
import { SealedBox } from './sealed-box';

export interface MasterKey {
  /** Not secret: a short digest that names the key in stored rows. */
  id: string;
  key: Buffer;
}

/** The key id: a digest of a derived value, so the id tells nothing about the key. */
export function masterKeyId(key: Buffer): string {
  const derived = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), 'master-key-id-v1', 32));
  return createHash('sha256').update(derived).digest('hex').slice(0, 16);
}

/**
 * The current master key, which seals everything new, and the previous ones, which still open
 * what they sealed until `npm run master-key:reseal` has moved every row to the current key.
 */
export class Keyring {
  readonly current: MasterKey;
  private readonly byId: Map<string, MasterKey>;

  /** Refuses a weak current key (from the environment or the data directory) before it seals anything. */
  constructor(current: Buffer, previous: Buffer[] = []) {
    assertStrongKey(current, 'the master key');
    this.current = { id: masterKeyId(current), key: current };
    const all = [this.current, ...previous.map((key) => ({ id: masterKeyId(key), key }))];
    this.byId = new Map(all.map((k) => [k.id, k]));
  }

  get all(): MasterKey[] {
    return [...this.byId.values()];
  }

  get(id: string): MasterKey | undefined {
    return this.byId.get(id);
  }
}

export interface Sealed {
  keyId: string;
  sealed: string;
}

/** A SealedBox per master key for one purpose: seals with the current key, opens with any known. */
export class KeyringBox implements SecretSealer {
  private readonly boxes = new Map<string, SealedBox>();

  constructor(
    private readonly keyring: Keyring,
    private readonly purpose: string,
  ) {}

  get currentKeyId(): string {
    return this.keyring.current.id;
  }

  seal(plaintext: string, context: string): Sealed {
    const { id } = this.keyring.current;
    return { keyId: id, sealed: this.box(id).seal(plaintext, context) };
  }

  /** Throws when the key is unknown, or the value was changed or sealed for another context. */
  open(value: Sealed, context: string): string {
    return this.box(value.keyId).open(value.sealed, context);
  }

  private box(keyId: string): SealedBox {
    let box = this.boxes.get(keyId);
    if (!box) {
      const key = this.keyring.get(keyId);
      if (!key) throw new Error(`master key ${keyId} is not configured (CP_MASTER_KEY_PREVIOUS?)`);
      box = new SealedBox(key.key, this.purpose);
      this.boxes.set(keyId, box);
    }
    return box;
  }
}
