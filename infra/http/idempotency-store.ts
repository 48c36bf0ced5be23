import { createHash, createHmac, hkdfSync } from 'node:crypto';
import type { Knex } from '@mikro-orm/knex';
import { canonicalJson } from '../../domain/canonical-json';
import { KeyringBox, type Keyring } from '../crypto/keyring';

export const IDEMPOTENCY_TTL_HOURS = 24;

/** The moment before which a claim without a final answer is stale; bind the seconds. */
const STALE_BEFORE = 'now() - make_interval(secs => ?)';

export interface StoredResponse {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /**
   * Kept once the request's resource exists, before its answer is final (an invoke waiting for
   * its end): replayed only if the request's process died before it stored the final one.
   */
  interim?: boolean;
}

/**
 * The digests a request's body may be stored under, the one to store first: an HMAC under a key
 * derived from each master key (the current first), then the plain SHA-256 that records written
 * before digests were keyed hold. Keyed, so that whoever reads the table cannot confirm a guess
 * of a secret the body held (a credential's); all of them, so that a retry across the upgrade or
 * a master key rotation still finds its record.
 */
export type RequestHashes = readonly [string, ...string[]];

export type Claim =
  | { kind: 'claimed' }
  | { kind: 'replay'; requestHash: string; response: StoredResponse | null }
  /** Stored, but it no longer opens: the master key that sealed it was dropped. */
  | { kind: 'unreadable' };

/**
 * Whose request a record is: the org, the principal that sent it (an API key id or a user id),
 * the Idempotency-Key and the route. Another principal's same key is another record, so a stored
 * response (which can hold a secret shown once) is replayed only to the caller that caused it.
 */
export interface RecordScope {
  orgId: string;
  principalId: string;
  key: string;
  route: string;
}

const whereOf = (s: RecordScope) => ({
  org_id: s.orgId,
  principal_id: s.principalId,
  key: s.key,
  route: s.route,
});

/**
 * First responses of requests sent with an `Idempotency-Key`, per org, principal, key and route,
 * kept 24 h. Responses can hold secrets shown once (a new API key), so they are stored sealed,
 * bound to their scope.
 */
export class IdempotencyStore {
  private readonly box: KeyringBox;
  private readonly digestKey: Buffer;
  private readonly previousDigestKeys: Buffer[];

  constructor(
    private readonly knex: Knex,
    private readonly keyring: Keyring,
  ) {
    this.box = new KeyringBox(keyring, 'idempotency');
    const digestKey = (key: Buffer) =>
      Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), 'idempotency-request-v1', 32));
    this.digestKey = digestKey(keyring.current.key);
    this.previousDigestKeys = keyring.all.filter((k) => k !== keyring.current).map((k) => digestKey(k.key));
  }

  hashesOf(body: unknown): RequestHashes {
    const canonical = canonicalJson(body ?? null);
    const keyed = (key: Buffer) => createHmac('sha256', key).update(canonical).digest('hex');
    const plain = createHash('sha256').update(canonical).digest('hex');
    return [keyed(this.digestKey), ...this.previousDigestKeys.map(keyed), plain];
  }

  /**
   * Claims the key for this request, or returns what an earlier request with it left. A claim
   * still without a response after `staleAfterMs` was left by a process that died mid-request: the
   * same request takes it over (what the dead one did is unknown, as it would be for a retry under
   * a new key); another body is still a conflict.
   */
  async claim(scope: RecordScope, hashes: RequestHashes, staleAfterMs: number): Promise<Claim> {
    const [requestHash] = hashes;
    await this.knex('idempotency_records')
      .where(whereOf(scope))
      .andWhere('expires_at', '<=', this.knex.fn.now())
      .delete();
    const inserted = await this.knex.raw<{ rows: unknown[] }>(
      `insert into idempotency_records
         (org_id, principal_id, key, route, request_hash, created_at, expires_at)
       values (?, ?, ?, ?, ?, now(), now() + interval '${IDEMPOTENCY_TTL_HOURS} hours')
       on conflict do nothing returning key`,
      [scope.orgId, scope.principalId, scope.key, scope.route, requestHash],
    );
    if (inserted.rows.length > 0) return { kind: 'claimed' };
    const row = (await this.knex('idempotency_records')
      .where(whereOf(scope))
      .first('*', this.knex.raw(`created_at < ${STALE_BEFORE} as stale`, [staleAfterMs / 1000]))) as
      { request_hash: string; response: string | null; stale: boolean } | undefined;
    if (!row) return this.claim(scope, hashes, staleAfterMs);
    if (!row.response) {
      if (hashes.includes(row.request_hash) && (await this.takeOver(scope, hashes, staleAfterMs)))
        return { kind: 'claimed' };
      return { kind: 'replay', requestHash: row.request_hash, response: null };
    }
    let response: StoredResponse;
    try {
      response = JSON.parse(this.unseal(row.response, this.context(scope))) as StoredResponse;
    } catch {
      return { kind: 'unreadable' };
    }
    // Its request may still be waiting for the final answer; once stale, its process died after
    // the resource was made, and the interim answer is all there is: never a second resource.
    if (!response.interim) return { kind: 'replay', requestHash: row.request_hash, response };
    const { interim: _interim, ...interim } = response;
    return { kind: 'replay', requestHash: row.request_hash, response: row.stale ? interim : null };
  }

  /** Restarts a claim left without a response for longer than `staleAfterMs`; true when this did. */
  private async takeOver(scope: RecordScope, hashes: RequestHashes, staleAfterMs: number): Promise<boolean> {
    const taken = await this.knex('idempotency_records')
      .where(whereOf(scope))
      .whereIn('request_hash', hashes)
      .whereNull('response')
      .andWhere('created_at', '<', this.knex.raw(STALE_BEFORE, [staleAfterMs / 1000]))
      .update({ created_at: this.knex.fn.now() });
    return taken > 0;
  }

  /**
   * The answer a retry gets if this request's process dies before `complete`: its resource exists
   * from now on, so taking the claim over would make a second one.
   */
  async created(scope: RecordScope, response: StoredResponse): Promise<void> {
    await this.complete(scope, { ...response, interim: true });
  }

  async complete(scope: RecordScope, response: StoredResponse): Promise<void> {
    const { keyId, sealed } = this.box.seal(JSON.stringify(response), this.context(scope));
    await this.knex('idempotency_records')
      .where(whereOf(scope))
      .update({ response: `${keyId}.${sealed}` });
  }

  /**
   * A request that failed leaves nothing behind, so the client may retry with the same key; one
   * that failed after its resource was made (`created`) keeps that answer.
   */
  async release(scope: RecordScope): Promise<void> {
    await this.knex('idempotency_records').where(whereOf(scope)).whereNull('response').delete();
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

  // The principal is bound into the seal: a row moved to another principal does not open.
  private context = (s: RecordScope) => `${s.orgId}\n${s.principalId}\n${s.route}\n${s.key}`;
}
