import type { Knex } from '@mikro-orm/knex';
import { ConfigError } from '../config';
import type { Logger } from '../logger';

/**
 * The key ids the database's sealed rows name: every credential's and webhook secret's (small
 * tables; credentials by an index), and that of the checkpoint of the most recently sealed head
 * (audit_heads holds one row per org; a healthy deployment signs every checkpoint under the
 * current key or one still in CP_MASTER_KEY_PREVIOUS).
 */
const KEY_IDS_IN_USE = `
  select 'credentials' as source, key_id from (
    select distinct key_id from credentials where sealed_secret is not null) c
  union all
  select 'webhook secrets', key_id from (
    select distinct key_id from webhooks where sealed_secret is not null) w
  union all
  select 'audit checkpoints', key_id from (
    select c.key_id from audit_heads h
    join audit_checkpoints c on c.org_id = h.org_id and c.seq = h.seq
    order by h.sealed_at desc limit 1) a`;

interface KeyUse {
  source: string;
  key_id: string;
}

/**
 * Refuses a start whose master keys open none of what the database holds: none of its secrets,
 * or, with no secrets yet, not the newest audit checkpoint. That is a mistyped CP_MASTER_KEY, or
 * none at all (a new key generated into the data directory): such a start would open no stored
 * secret and sign new audit checkpoints under a key verify does not know, breaking the log for
 * good. A key truly lost is said so with CP_MASTER_KEY_LOST=true, which starts anyway. What else
 * names a key not configured (an old key dropped before its reseal) is logged at error.
 * `known` holds every key id the configured keys give: master key ids and checkpoint key ids.
 */
export async function checkMasterKeys(
  knex: Knex,
  known: ReadonlySet<string>,
  logger: Logger,
  keyLost = false,
): Promise<void> {
  const { rows } = await knex.raw<{ rows: KeyUse[] }>(KEY_IDS_IN_USE);
  const unknown = rows.filter((r) => !known.has(r.key_id));
  if (unknown.length === 0) return;
  const named = (uses: KeyUse[]) => uses.map((r) => `${r.source} under key ${r.key_id}`).join(', ');
  const secrets = rows.filter((r) => r.source !== 'audit checkpoints');
  const judged = secrets.length > 0 ? secrets : rows;
  if (!keyLost && judged.every((r) => !known.has(r.key_id)))
    throw new ConfigError([
      `CP_MASTER_KEY: not the key this database was sealed with (${named(judged)}). Set CP_MASTER_KEY ` +
        'to that key; after a rotation, put the old key in CP_MASTER_KEY_PREVIOUS and run ' +
        '`npm run master-key:reseal`. If that key is lost, see "Rotating the master key" in README.md',
    ]);
  logger.error(
    { unknown_keys: unknown },
    `sealed under master keys not configured, so they do not open or verify: ${named(unknown)}. ` +
      'Put those keys in CP_MASTER_KEY_PREVIOUS and run `npm run master-key:reseal`',
  );
}
