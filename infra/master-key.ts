import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Keyring } from './crypto/keyring';

/**
 * The key that seals credentials. Outside production it may be left unset: one is generated
 * once into the data directory (mode 0600) so the quick start keeps working across restarts.
 */
export function resolveMasterKey(configured: string | undefined, dataDir: string): Buffer {
  if (configured) return Buffer.from(configured, 'base64');
  const file = join(dataDir, 'master.key');
  if (existsSync(file)) return Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  mkdirSync(dataDir, { recursive: true });
  const key = randomBytes(32);
  writeFileSync(file, key.toString('base64') + '\n', { mode: 0o600 });
  return key;
}

/** The current key and the previous ones named in CP_MASTER_KEY_PREVIOUS. */
export function resolveKeyring(
  configured: string | undefined,
  previous: string | undefined,
  dataDir: string,
) {
  const old = (previous ?? '')
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean)
    .map((k) => Buffer.from(k, 'base64'));
  return new Keyring(resolveMasterKey(configured, dataDir), old);
}
