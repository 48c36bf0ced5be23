import type Redis from 'ioredis';
import type { Knex } from '@mikro-orm/knex';
import { hashToken, TOKEN_SHAPE } from '../../domain/auth/tokens';
import { DomainError } from '../../domain/errors';
import type { AuthCache } from '../../domain/ports';
import type { Principal } from '../../domain/principal';
import { scopesOfRole, type Role, type Scope } from '../../domain/scopes';
import { FailureLimit } from '../http/rate-limiters';

/** What is cached per token hash: enough to decide without the database. */
interface CachedAuth {
  kind: 'api_key' | 'user';
  id: string;
  orgId: string;
  scopes: Scope[];
  role?: Role;
  sessionId?: string;
  expiresAt: number;
  revokedAt: number | null;
}

const REDIS_TTL_SECONDS = 30;
// Bounds how long another replica's revocation can go unseen by this process.
const LOCAL_TTL_MS = 1_000;
const LOCAL_MAX = 10_000;

const TOMBSTONE = 'forgotten';

const invalid = () => new DomainError('invalid_api_key', 'the API key or session token is not valid');

/**
 * Resolves a bearer token to a principal. Lookups go local memory (1 s) -> Redis (30 s) ->
 * PostgreSQL; revocation replaces the Redis entry with a tombstone, and every cached entry
 * carries its own expiry and revocation time, which are checked on each request.
 *
 * Well-formed tokens that fail are counted per client address. Past the limit, that address gets
 * 429 before any database lookup: only tokens the caches vouch for still pass. Telling a valid key
 * from a guess takes the very lookup being rationed, so a valid key from that address works while
 * cached; other addresses are never affected.
 */
export class TokenAuthenticator implements AuthCache {
  private readonly local = new Map<string, { auth: CachedAuth; until: number }>();
  private readonly failures: FailureLimit;

  constructor(
    private readonly knex: Knex,
    private readonly redis: Redis,
    private readonly prefix: string,
    failuresPerMinute: number,
  ) {
    this.failures = new FailureLimit(redis, `${prefix}:rl:authfail`, failuresPerMinute);
  }

  /** `from` is the client address failures are counted against (none: not counted). */
  async authenticate(token: string, from: string | null = null, now = Date.now()): Promise<Principal> {
    if (!TOKEN_SHAPE.test(token) || token.startsWith('cit_')) throw invalid();
    const tokenHash = hashToken(token);
    const auth = await this.lookup(tokenHash, token.startsWith('csk_'), from, now);
    if (!auth || (auth.revokedAt !== null && auth.revokedAt <= now)) {
      if (from !== null) await this.failures.record(from);
      throw invalid();
    }
    if (auth.expiresAt <= now) {
      // One code for both kinds of token (the contract's), but what to do next differs.
      const next =
        auth.kind === 'user'
          ? 'the dashboard session has expired: log in again'
          : 'the key has expired: mint or rotate a new one';
      throw new DomainError('expired_api_key', next);
    }
    const { kind, id, orgId, scopes, role, sessionId } = auth;
    return {
      kind,
      id,
      orgId,
      scopes,
      tokenHash,
      ...(role ? { role } : {}),
      ...(sessionId ? { sessionId } : {}),
    };
  }

  /**
   * Leaves a tombstone rather than deleting: a replica that read the row just before the
   * revocation committed fills the cache with SET NX, which a tombstone refuses.
   */
  async forget(tokenHash: string): Promise<void> {
    this.local.delete(tokenHash);
    await this.redis.set(this.redisKey(tokenHash), TOMBSTONE, 'EX', REDIS_TTL_SECONDS * 2);
  }

  private redisKey = (tokenHash: string) => `${this.prefix}:auth:${tokenHash}`;

  private async lookup(
    tokenHash: string,
    isKey: boolean,
    from: string | null,
    now: number,
  ): Promise<CachedAuth | null> {
    const hit = this.local.get(tokenHash);
    if (hit && hit.until > now) return hit.auth;
    const cached = await this.redis.get(this.redisKey(tokenHash));
    if (cached && cached !== TOMBSTONE)
      return this.remember(tokenHash, JSON.parse(cached) as CachedAuth, now);
    if (from !== null) await this.failures.check(from, 'too many failed authentications from this address');
    const auth = await this.fromDatabase(tokenHash, isKey);
    if (!auth) return null;
    // While tombstoned nothing is cached: requests read the database until the tombstone expires.
    if (cached) return auth;
    await this.redis.set(this.redisKey(tokenHash), JSON.stringify(auth), 'EX', REDIS_TTL_SECONDS, 'NX');
    return this.remember(tokenHash, auth, now);
  }

  private remember(tokenHash: string, auth: CachedAuth, now: number): CachedAuth {
    if (this.local.size >= LOCAL_MAX) this.local.clear();
    this.local.set(tokenHash, { auth, until: now + LOCAL_TTL_MS });
    return auth;
  }

  private async fromDatabase(tokenHash: string, isKey: boolean): Promise<CachedAuth | null> {
    return isKey ? this.keyFromDatabase(tokenHash) : this.sessionFromDatabase(tokenHash);
  }

  private async keyFromDatabase(tokenHash: string): Promise<CachedAuth | null> {
    const row = await this.knex('api_keys')
      .select('id', 'org_id', 'scopes', 'expires_at', 'revoked_at')
      .where({ secret_hash: tokenHash })
      .first();
    if (!row) return null;
    return {
      kind: 'api_key',
      id: row.id,
      orgId: row.org_id,
      scopes: row.scopes,
      expiresAt: new Date(row.expires_at).getTime(),
      revokedAt: row.revoked_at ? new Date(row.revoked_at).getTime() : null,
    };
  }

  private async sessionFromDatabase(tokenHash: string): Promise<CachedAuth | null> {
    const row = await this.knex('user_sessions as s')
      .join('users as u', 'u.id', 's.user_id')
      .select('s.id', 's.org_id', 's.user_id', 's.expires_at', 's.revoked_at', 'u.role')
      .where('s.token_hash', tokenHash)
      .first();
    if (!row) return null;
    return {
      kind: 'user',
      id: row.user_id,
      orgId: row.org_id,
      role: row.role,
      sessionId: row.id,
      scopes: scopesOfRole(row.role),
      expiresAt: new Date(row.expires_at).getTime(),
      revokedAt: row.revoked_at ? new Date(row.revoked_at).getTime() : null,
    };
  }
}
