import type { Knex } from '@mikro-orm/knex';
import { KeyringBox, type Keyring } from '../crypto/keyring';

export const IDEMPOTENCY_TTL_HOURS = 24;

export interface StoredResponse {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export type Claim =
  { kind: 'claimed' } | { kind: 'replay'; requestHash: string; response: StoredResponse | null };

/**
 * First responses of requests sent with an `Idempotency-Key`, per org, key and route, kept 24 h.
 * Responses can hold secrets shown once (a new API key), so they are stored sealed.
 */
export class IdempotencyStore {
  private readonly box: KeyringBox;

  constructor(
    private readonly knex: Knex,
    private readonly keyring: Keyring,
  ) {
    this.box = new KeyringBox(keyring, 'idempotency');
  }

  /** Claims the key for this request, or returns what an earlier request with it left. */
  async claim(orgId: string, key: string, route: string, requestHash: string): Promise<Claim> {
    await this.knex('idempotency_records')
      .where({ org_id: orgId, key, route })
      .andWhere('expires_at', '<=', this.knex.fn.now())
      .delete();
    const inserted = await this.knex.raw<{ rows: unknown[] }>(
      `insert into idempotency_records (org_id, key, route, request_hash, created_at, expires_at)
       values (?, ?, ?, ?, now(), now() + interval '${IDEMPOTENCY_TTL_HOURS} hours')
       on conflict do nothing returning key`,
      [orgId, key, route, requestHash],
    );
    if (inserted.rows.length > 0) return { kind: 'claimed' };
    const row = await this.knex('idempotency_records').where({ org_id: orgId, key, route }).first();
    if (!row) return this.claim(orgId, key, route, requestHash);
    const context = this.context(orgId, key, route);
    const response = row.response ? (JSON.parse(this.unseal(row.response, context)) as StoredResponse) : null;
    return { kind: 'replay', requestHash: row.request_hash, response };
  }

  async complete(orgId: string, key: string, route: string, response: StoredResponse): Promise<void> {
    const { keyId, sealed } = this.box.seal(JSON.stringify(response), this.context(orgId, key, route));
    await this.knex('idempotency_records')
      .where({ org_id: orgId, key, route })
      .update({ response: `${keyId}.${sealed}` });
  }

  /** A request that failed leaves nothing behind, so the client may retry with the same key. */
  async release(orgId: string, key: string, route: string): Promise<void> {
    await this.knex('idempotency_records')
      .where({ org_id: orgId, key, route })
      .whereNull('response')
      .delete();
  }

  async deleteExpired(): Promise<number> {
    return this.knex('idempotency_records').where('expires_at', '<=', this.knex.fn.now()).delete();
  }

  /** Stored as `<key id>.<sealed>` (base64 has no dot); older rows without an id used the current key. */
  private unseal(stored: string, context: string): string {
    const dot = stored.indexOf('.');
    const value =
      dot < 0
        ? { keyId: this.keyring.current.id, sealed: stored }
        : { keyId: stored.slice(0, dot), sealed: stored.slice(dot + 1) };
    return this.box.open(value, context);
  }

  private context = (orgId: string, key: string, route: string) => `${orgId}\n${route}\n${key}`;
}
