import type Redis from 'ioredis';
import type {
  CapLedger,
  CapName,
  CapSnapshot,
  HeldReservation,
  ReserveOutcome,
  SettleOutcome,
} from '../../domain/budget/cap-ledger';
import type { CapAmounts } from '../../domain/budget/charges';
import { RESERVE, RESTORE, SETTLE } from './cap-scripts';

type Script = (...args: (string | number)[]) => Promise<unknown>;

/** The ledger's state outlives its session by a day, for invocations that settle late. */
const KEEP_AFTER_EXPIRY_MS = 86_400_000;

const amountArgs = (a: CapAmounts) => [String(a.costMicros), String(a.calls), String(a.tokens)];

/**
 * Atomic cost caps in Redis (see cap-scripts.ts). A lease index (one sorted set, reservation time
 * as score) lets the reaper find reservations whose worker died; it is only an index, checked
 * against PostgreSQL before anything is released.
 */
export class RedisCapLedger implements CapLedger {
  private readonly reserveScript: Script;
  private readonly settleScript: Script;
  private readonly restoreScript: Script;
  private readonly leases: string;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly now: () => number = Date.now,
  ) {
    this.reserveScript = this.define('cpCapReserve', RESERVE);
    this.settleScript = this.define('cpCapSettle', SETTLE);
    this.restoreScript = this.define('cpCapRestore', RESTORE);
    this.leases = `${prefix}:cap:leases`;
  }

  async reserve(sessionId: string, invocationId: string, amounts: CapAmounts): Promise<ReserveOutcome> {
    const lease = `${sessionId} ${invocationId}`;
    // Indexed first: a reservation never exists without its lease.
    const [, reply] = await Promise.all([
      this.redis.zadd(this.leases, 'NX', this.now(), lease),
      this.reserveScript(...this.keys(sessionId), invocationId, ...amountArgs(amounts)) as Promise<string[]>,
    ]);
    const [kind, cap, limit, remaining] = reply;
    if (kind === 'reserved' || kind === 'missing' || kind === 'held') return { kind };
    await this.redis.zrem(this.leases, lease);
    if (kind === 'settled') return { kind };
    return { kind: 'refused', cap: cap as CapName, limit: Number(limit), remaining: Number(remaining) };
  }

  async settle(sessionId: string, invocationId: string, charged: CapAmounts): Promise<SettleOutcome> {
    const lease = `${sessionId} ${invocationId}`;
    // Whatever the outcome, nothing is held for this invocation any more: the lease goes in the
    // same round trip, after the script. A script that fails puts it back, for the reaper.
    const [settled, dropped] = await Promise.allSettled([
      this.settleScript(
        ...this.keys(sessionId),
        invocationId,
        ...amountArgs(charged),
      ) as Promise<SettleOutcome>,
      this.redis.zrem(this.leases, lease),
    ]);
    if (settled.status === 'rejected') {
      await this.redis.zadd(this.leases, 'NX', this.now(), lease).catch(() => undefined);
      throw settled.reason;
    }
    if (dropped.status === 'rejected') throw dropped.reason;
    return settled.value;
  }

  async restore(s: CapSnapshot): Promise<boolean> {
    const written = await this.restoreScript(
      ...this.keys(s.sessionId),
      String(s.expiresAt.getTime() + KEEP_AFTER_EXPIRY_MS),
      String(s.limits.costMicros),
      String(s.limits.calls ?? -1),
      String(s.limits.tokens ?? -1),
      ...amountArgs(s.spent),
      ...s.inFlight.flatMap((i) => [i.invocationId, ...amountArgs(i.amounts)]),
    );
    if (written === 1 && s.inFlight.length > 0)
      await this.redis.zadd(
        this.leases,
        ...s.inFlight.flatMap((i) => [this.now(), `${s.sessionId} ${i.invocationId}`]),
      );
    return written === 1;
  }

  /**
   * Plain commands, not a pipeline of their own: the connection auto-pipelines, so the reads of
   * concurrent requests leave in one write.
   */
  async reserved(sessionIds: string[]): Promise<Map<string, CapAmounts>> {
    const replies = await Promise.all(
      sessionIds.map((id) => this.redis.hmget(this.keys(id)[0], 'cr', 'kr', 'tr')),
    );
    return new Map(
      sessionIds.map((id, i) => {
        const [cost, calls, tokens] = replies[i] ?? [];
        return [
          id,
          { costMicros: Number(cost ?? 0), calls: Number(calls ?? 0), tokens: Number(tokens ?? 0) },
        ];
      }),
    );
  }

  async isHeld(sessionId: string, chargeId: string): Promise<boolean | null> {
    const [state, res] = this.keys(sessionId);
    const [exists, held] = await Promise.all([this.redis.exists(state), this.redis.hexists(res, chargeId)]);
    return exists === 0 ? null : held === 1;
  }

  async heldLongerThan(olderThanMs: number, limit: number): Promise<HeldReservation[]> {
    const members = await this.redis.zrangebyscore(
      this.leases,
      '-inf',
      this.now() - olderThanMs,
      'LIMIT',
      0,
      limit,
    );
    return members.flatMap((m) => {
      const [sessionId, invocationId] = m.split(' ');
      return sessionId && invocationId ? [{ sessionId, invocationId }] : [];
    });
  }

  /** How many reservations are held now: the lease index's size (read by /metrics). */
  outstanding(): Promise<number> {
    return this.redis.zcard(this.leases);
  }

  /** One hash tag per session: its three keys live in one cluster slot. */
  private keys(sessionId: string): [string, string, string] {
    const base = `${this.prefix}:cap:{${sessionId}}`;
    return [base, `${base}:res`, `${base}:settled`];
  }

  private define(name: string, lua: string): Script {
    const redis = this.redis as Redis & Record<string, Script>;
    if (!redis[name]) redis.defineCommand(name, { numberOfKeys: 3, lua });
    const command = redis[name] as Script;
    return (...args) => command.apply(redis, args);
  }
}
