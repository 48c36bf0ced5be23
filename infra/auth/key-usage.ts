import type Redis from 'ioredis';
import type { Knex } from '@mikro-orm/knex';

// One Redis write per key per second per process is plenty for a "last used" time.
const TOUCH_EVERY_MS = 1_000;

/**
 * Keeps `last_used_at` current without a database write per request: requests note the time
 * in a Redis hash, reads merge it in, and a periodic job writes it to PostgreSQL.
 */
export class KeyUsageTracker {
  private readonly touched = new Map<string, number>();

  constructor(
    private readonly knex: Knex,
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  private get hashKey() {
    return `${this.prefix}:key_last_used`;
  }

  touch(keyId: string, now = Date.now()): void {
    if ((this.touched.get(keyId) ?? 0) + TOUCH_EVERY_MS > now) return;
    if (this.touched.size > 10_000) this.touched.clear();
    this.touched.set(keyId, now);
    this.redis.hset(this.hashKey, keyId, String(now)).catch(() => this.touched.delete(keyId));
  }

  /** The most recent use of each key, from Redis where it is newer than the database. */
  async lastUsed(keyIds: string[]): Promise<Map<string, Date>> {
    if (keyIds.length === 0) return new Map();
    const values = await this.redis.hmget(this.hashKey, ...keyIds);
    const out = new Map<string, Date>();
    keyIds.forEach((id, i) => {
      const v = values[i];
      if (v) out.set(id, new Date(Number(v)));
    });
    return out;
  }

  async flush(): Promise<number> {
    const all = await this.redis.hgetall(this.hashKey);
    const ids = Object.keys(all);
    if (ids.length === 0) return 0;
    const times = ids.map((id) => new Date(Number(all[id])));
    await this.knex.raw(
      `update api_keys k set last_used_at = greatest(coalesce(k.last_used_at, to_timestamp(0)), v.ts)
         from unnest(?::text[], ?::timestamptz[]) as v(id, ts) where k.id = v.id`,
      [ids, times],
    );
    return ids.length;
  }
}
