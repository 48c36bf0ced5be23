import type Redis from 'ioredis';
import type { Checkpoint } from '../../domain/audit/checkpoint';

// Moves forward only, so a sealer that finishes late cannot put an older head back.
const ADVANCE = `
local seq = tonumber(redis.call('HGET', KEYS[1], 'seq'))
if seq and seq >= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'seq', ARGV[1], 'org_id', ARGV[2], 'hash', ARGV[3], 'key_id', ARGV[4],
  'signature', ARGV[5], 'signed_at', ARGV[6])
return 1`;

// Re-signs the head in place, only while it is still the one that was checked (the sealer may move it).
const RESIGN = `
local h = redis.call('HMGET', KEYS[1], 'seq', 'hash', 'key_id', 'signature')
if h[1] ~= ARGV[1] or h[2] ~= ARGV[2] or h[3] ~= ARGV[3] or h[4] ~= ARGV[4] then return 0 end
redis.call('HSET', KEYS[1], 'key_id', ARGV[5], 'signature', ARGV[6])
return 1`;

// Keeps the lowest seq it was given: a later, earlier divergence is the one to report.
const DIVERGE = `
local since = tonumber(redis.call('HGET', KEYS[1], 'since'))
if since and since <= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'since', ARGV[1])
return 1`;

/**
 * Each org's newest signed chain head, kept in Redis: out of reach of someone who has only the
 * database, so cutting the chain's tail there leaves this head ahead of it (see verify-audit.ts).
 */
export class RedisSignedHeads {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  private key(orgId: string): string {
    return `${this.prefix}:audit:head:${orgId}`;
  }

  private divergedKey(orgId: string): string {
    return `${this.prefix}:audit:diverged:${orgId}`;
  }

  /**
   * Records that the sealer chained entries from `since` on after a chain that no longer passed
   * through the signed head: kept for good (the lowest such seq), so removing them later, and
   * putting the chain back as it was, still shows.
   */
  async markDiverged(orgId: string, since: number): Promise<void> {
    await this.redis.eval(DIVERGE, 1, this.divergedKey(orgId), since);
  }

  /** The first seq sealed after a chain that did not follow the signed head; null when none was. */
  async divergedSince(orgId: string): Promise<number | null> {
    const since = await this.redis.hget(this.divergedKey(orgId), 'since');
    return since === null ? null : Number(since);
  }

  async get(orgId: string): Promise<Checkpoint | null> {
    const h = await this.redis.hgetall(this.key(orgId));
    if (!h.seq || !h.org_id || !h.hash || !h.key_id || !h.signature || !h.signed_at) return null;
    return {
      orgId: h.org_id,
      seq: Number(h.seq),
      hash: h.hash,
      keyId: h.key_id,
      signature: h.signature,
      signedAt: new Date(h.signed_at),
    };
  }

  async advance(head: Checkpoint): Promise<void> {
    await this.redis.eval(
      ADVANCE,
      1,
      this.key(head.orgId),
      head.seq,
      head.orgId,
      head.hash,
      head.keyId,
      head.signature,
      head.signedAt.toISOString(),
    );
  }

  /** The same head signed under another key (master key rotation); false when it moved meanwhile. */
  async replaceSignature(from: Checkpoint, to: Checkpoint): Promise<boolean> {
    const args = [from.seq, from.hash, from.keyId, from.signature, to.keyId, to.signature];
    return (await this.redis.eval(RESIGN, 1, this.key(from.orgId), ...args)) === 1;
  }
}
