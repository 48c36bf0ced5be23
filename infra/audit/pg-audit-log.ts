import type { Knex } from '@mikro-orm/knex';
import { OnceAMinute } from '../logging/once-a-minute';
import type { AuditEntry, AuditEvent } from '../../domain/audit/audit-event';
import type { AuditFilter, AuditLog, AuditPage, ChainSnapshot } from '../../domain/audit/audit-log';
import { signCheckpoint, type Checkpoint, type CheckpointKey } from '../../domain/audit/checkpoint';
import { GENESIS_HASH, sealEvents, type ChainHead } from '../../domain/audit/hash-chain';
import { MOVE_TO_ENTRIES } from '../db/audit-rows';
import { OutboxVacuum } from './outbox-vacuum';
import type { RedisSignedHeads } from './redis-signed-heads';
import type { Logger } from '../logger';

const SEAL_BATCH = 500;

/** $1 = $2 the org: its newest entry and its newest checkpoint, in one round trip. */
const NEWEST_LINKS = `
  (select 'entry' as kind, seq, hash from audit_entries where org_id = ? order by seq desc limit 1)
  union all
  (select 'checkpoint', seq, hash from audit_checkpoints where org_id = ? order by seq desc limit 1)`;
const VERIFY_BATCH = 1000;

/**
 * The orgs with events in audit_outbox, one index probe per org (a loose index scan on
 * (org_id, pos)): `select distinct` reads the whole table, dead rows included.
 */
const ORGS_WITH_PENDING = `
  with recursive orgs as (
    (select org_id from audit_outbox order by org_id limit 1)
    union all
    select (select o.org_id from audit_outbox o where o.org_id > orgs.org_id order by o.org_id limit 1)
    from orgs where orgs.org_id is not null
  )
  select org_id from orgs where org_id is not null`;

interface EventRow {
  id: string;
  org_id: string;
  at: Date | string; // MikroORM's pg driver hands timestamps back as strings
  actor_type: string;
  actor_id: string;
  action: string;
  resource_type: string;
  resource_id: string;
  outcome: string;
  details: Record<string, unknown>;
  request_id: string | null;
}
export interface CheckpointRow {
  org_id: string;
  seq: string;
  hash: string;
  key_id: string;
  signature: string;
  at: Date | string;
}
interface EntryRow extends EventRow {
  seq: string;
  prev_hash: string;
  hash: string;
}

const toEvent = (r: EventRow): AuditEvent => ({
  id: r.id,
  orgId: r.org_id,
  at: new Date(r.at),
  actor: { type: r.actor_type as AuditEvent['actor']['type'], id: r.actor_id },
  action: r.action,
  resource: { type: r.resource_type, id: r.resource_id },
  outcome: r.outcome as AuditEvent['outcome'],
  details: r.details,
  requestId: r.request_id,
});

const toEntry = (r: EntryRow): AuditEntry => ({
  ...toEvent(r),
  seq: Number(r.seq),
  prevHash: r.prev_hash,
  hash: r.hash,
});

export const toCheckpoint = (r: CheckpointRow): Checkpoint => ({
  orgId: r.org_id,
  seq: Number(r.seq),
  hash: r.hash,
  keyId: r.key_id,
  signature: r.signature,
  signedAt: new Date(r.at),
});

/**
 * The audit log in PostgreSQL. Changes insert events into audit_outbox in their own
 * transactions (no lock shared between writers); sealing moves them into audit_entries under
 * the org's head row lock, so each org has one chain writer at a time and the chain never forks.
 * Each sealed head is signed into audit_checkpoints and, after commit, into the signed heads
 * kept outside the database.
 */
export class PgAuditLog implements AuditLog {
  private readonly outboxVacuum: OutboxVacuum;
  /** When each org that could not be sealed was last logged. */
  private readonly failuresLogged = new OnceAMinute();
  private readonly headMismatchLogged = new OnceAMinute();
  private readonly divergedLogged = new OnceAMinute();

  constructor(
    private readonly knex: Knex,
    private readonly checkpointKey: CheckpointKey,
    private readonly signedHeads: RedisSignedHeads,
    private readonly logger?: Pick<Logger, 'error'>,
  ) {
    this.outboxVacuum = new OutboxVacuum(knex);
  }

  /**
   * Seals the org's pending events. `skipLocked`: an org another transaction is sealing (or holds
   * stuck) is left for the next round instead of waited for.
   */
  async seal(orgId: string, skipLocked = false): Promise<number> {
    let total = 0;
    for (;;) {
      const sealed = await this.sealBatch(orgId, skipLocked);
      total += sealed;
      if (sealed < SEAL_BATCH) return total;
    }
  }

  /**
   * Seals every org that has pending events; what the background job runs. One org that cannot be
   * sealed is logged and skipped, and one whose head another transaction holds is skipped without
   * waiting (a second worker sealing it, or a session stuck holding it): neither may hold up every
   * org after it, nor the webhooks fed after the seal. If any failed, the job
   * fails too (after the rest are sealed) with the first failure, so the queue shows it.
   */
  async sealAll(): Promise<number> {
    const { rows: orgs } = await this.knex.raw<{ rows: { org_id: string }[] }>(ORGS_WITH_PENDING);
    let total = 0;
    const failed: unknown[] = [];
    for (const { org_id } of orgs) {
      try {
        total += await this.seal(org_id, true);
      } catch (err) {
        this.logFailedOrg(org_id, err);
        failed.push(err);
      }
    }
    await this.outboxVacuum.afterSealing(total);
    if (failed.length > 0) throw failed[0];
    return total;
  }

  /** Once a minute per org at most: the job runs five times a second, and so would the line. */
  private logFailedOrg(orgId: string, err: unknown): void {
    if (!this.failuresLogged.due(orgId).log) return;
    this.logger?.error({ err, org_id: orgId }, 'audit seal: this org could not be sealed; its events wait');
  }

  private async sealBatch(orgId: string, skipLocked: boolean): Promise<number> {
    const sealed = await this.knex.transaction(async (trx) => {
      const recorded = await this.lockHead(trx, orgId, skipLocked);
      if (!recorded) return null;
      const pending = await this.takePending(trx, orgId);
      if (pending.length === 0) return null;
      const { head, lastEntrySeq } = await this.chainHead(trx, orgId, recorded);
      const follows = await this.followsSignedHead(trx, orgId, head);
      // Before the commit, so no lost acknowledgement can leave these entries unrecorded; from the
      // last entry the chain holds, since a checkpoint left past it vouches for nothing (QA).
      if (!follows) await this.diverged(orgId, Math.min(head.seq, lastEntrySeq) + 1);
      const entries = sealEvents(head, pending);
      const checkpoint = await this.append(trx, orgId, entries);
      return { count: entries.length, checkpoint, follows };
    });
    if (!sealed) return 0;
    // After commit, so the head kept outside never names entries the database does not hold.
    if (sealed.follows) await this.signedHeads.advance(sealed.checkpoint);
    return sealed.count;
  }

  /**
   * Entries from `since` on are sealed after a chain that no longer passes through the signed
   * head kept outside: changed behind the service. Recorded there for good, so that verify
   * reports them even once the change is undone and they are cut (see verify-audit.ts).
   */
  private async diverged(orgId: string, since: number): Promise<void> {
    await this.signedHeads.markDiverged(orgId, since);
    if (this.divergedLogged.due(orgId).log)
      this.logger?.error(
        { org_id: orgId, since },
        'audit seal: the chain no longer passes through the signed head kept in Redis (changed outside the service); verify reports the entries sealed since',
      );
  }

  /**
   * Whether the chain still passes through the signed head kept outside. It was written after
   * its batch committed, and we hold the head lock, so a healthy chain always does; when the
   * chain was cut or rewritten that head is evidence, and is never moved off it.
   */
  private async followsSignedHead(trx: Knex.Transaction, orgId: string, head: ChainHead): Promise<boolean> {
    const outside = await this.signedHeads.get(orgId);
    if (!outside) return true;
    if (outside.seq > head.seq) return false;
    const entry = await trx('audit_entries')
      .where({ org_id: orgId, seq: outside.seq })
      .first<{ hash: string } | undefined>('hash');
    return entry?.hash === outside.hash;
  }

  /** One chain writer per org: the head row is locked until the batch commits. What it records. */
  /** The org's head row, locked; null when `skipLocked` and another transaction holds it. */
  private async lockHead(
    trx: Knex.Transaction,
    orgId: string,
    skipLocked: boolean,
  ): Promise<ChainHead | null> {
    await trx.raw(
      `insert into audit_heads (org_id, seq, hash, sealed_at) values (?, 0, ?, now()) on conflict do nothing`,
      [orgId, GENESIS_HASH],
    );
    const locking = trx('audit_heads').where({ org_id: orgId }).forUpdate();
    const row = await (skipLocked ? locking.skipLocked() : locking).first<
      { seq: string; hash: string } | undefined
    >('seq', 'hash');
    if (!row) return skipLocked ? null : { seq: 0, hash: GENESIS_HASH };
    return { seq: Number(row.seq), hash: row.hash };
  }

  /**
   * The chain goes on from its last entry, read under the head lock in a statement of its own (one
   * joined to the locking read would see the entries from before a sealer it waited for). The head
   * row only records it (append moves it): one that disagrees was changed behind the service, as
   * it has no trigger, and is logged; verify judges the entries by their signed heads. When the
   * newest checkpoint is past the last entry, entries it signed were deleted behind the service:
   * the chain goes on from that checkpoint, so new events are sealed (after a gap verify reports)
   * instead of colliding with it and waiting in the outbox for ever.
   */
  private async chainHead(
    trx: Knex.Transaction,
    orgId: string,
    recorded: ChainHead,
  ): Promise<{ head: ChainHead; lastEntrySeq: number }> {
    const { rows } = await trx.raw<{ rows: { kind: string; seq: string; hash: string }[] }>(NEWEST_LINKS, [
      orgId,
      orgId,
    ]);
    const [entry, signed] = ['entry', 'checkpoint'].map((kind) => rows.find((r) => r.kind === kind));
    const last = { seq: Number(entry?.seq ?? 0), hash: entry?.hash ?? GENESIS_HASH };
    const head =
      signed && Number(signed.seq) > last.seq ? { seq: Number(signed.seq), hash: signed.hash } : last;
    // Throttled as a failed org is: when the seal then fails too, this is found again every round.
    const changed = head !== last || head.seq !== recorded.seq || head.hash !== recorded.hash;
    if (changed && this.headMismatchLogged.due(orgId).log)
      this.logger?.error(
        { org_id: orgId, head_row: recorded, last_entry: last, sealing_after: head },
        head === last
          ? 'audit seal: the head row does not match the chain (changed outside the service); sealing after the last entry'
          : 'audit seal: entries the last checkpoint signed are gone (deleted outside the service); sealing after that checkpoint',
      );
    return { head, lastEntrySeq: last.seq };
  }

  private async takePending(trx: Knex.Transaction, orgId: string): Promise<AuditEvent[]> {
    const { rows } = await trx.raw<{ rows: EventRow[] }>(
      `select * from audit_outbox where org_id = ? order by pos limit ?`,
      [orgId, SEAL_BATCH],
    );
    return rows.map(toEvent);
  }

  /** Appends the entries, moves the head and signs it as a checkpoint. */
  private async append(trx: Knex.Transaction, orgId: string, entries: AuditEntry[]): Promise<Checkpoint> {
    const links = entries.map((e) => ({ id: e.id, seq: e.seq, prev_hash: e.prevHash, hash: e.hash }));
    const { rows } = await trx.raw<{ rows: { n: number }[] }>(MOVE_TO_ENTRIES, [JSON.stringify(links)]);
    if (rows[0]?.n !== entries.length) throw new Error('audit seal: the outbox changed under the head lock');
    const last = entries.at(-1) as AuditEntry;
    await trx('audit_heads')
      .where({ org_id: orgId })
      .update({ seq: last.seq, hash: last.hash, sealed_at: trx.fn.now() });
    const checkpoint = signCheckpoint(this.checkpointKey, orgId, last, new Date());
    await trx('audit_checkpoints').insert({
      org_id: orgId,
      seq: checkpoint.seq,
      hash: checkpoint.hash,
      key_id: checkpoint.keyId,
      signature: checkpoint.signature,
      at: checkpoint.signedAt,
    });
    return checkpoint;
  }

  async list(
    orgId: string,
    filter: AuditFilter,
    limit: number,
    beforeSeq: number | null,
  ): Promise<AuditPage> {
    const query = this.knex<EntryRow>('audit_entries').where({ org_id: orgId });
    if (filter.action) query.andWhere({ action: filter.action });
    if (filter.actorId) query.andWhere({ actor_id: filter.actorId });
    if (filter.resourceId) query.andWhere({ resource_id: filter.resourceId });
    if (filter.since) query.andWhere('at', '>=', filter.since);
    if (filter.until) query.andWhere('at', '<', filter.until);
    if (beforeSeq !== null) query.andWhere('seq', '<', beforeSeq);
    const rows: EntryRow[] = await query.orderBy('seq', 'desc').limit(limit + 1);
    const items = rows.slice(0, limit).map(toEntry);
    return { items, nextBeforeSeq: rows.length > limit ? (items.at(-1)?.seq ?? null) : null };
  }

  divergedSince(orgId: string): Promise<number | null> {
    return this.signedHeads.divergedSince(orgId);
  }

  signedHead(orgId: string): Promise<Checkpoint | null> {
    return this.signedHeads.get(orgId);
  }

  /** One repeatable-read snapshot: a seal committing meanwhile is either wholly in it or not. */
  readChain<T>(orgId: string, read: (chain: ChainSnapshot) => Promise<T>): Promise<T> {
    return this.knex.transaction(
      async (trx) => {
        const rows: CheckpointRow[] = await trx('audit_checkpoints').where({ org_id: orgId }).orderBy('seq');
        return read({ checkpoints: rows.map(toCheckpoint), entries: () => this.inOrder(trx, orgId) });
      },
      { isolationLevel: 'repeatable read', readOnly: true },
    );
  }

  private async *inOrder(trx: Knex.Transaction, orgId: string): AsyncIterable<AuditEntry[]> {
    let after = 0;
    for (;;) {
      const rows: EntryRow[] = await trx('audit_entries')
        .where({ org_id: orgId })
        .andWhere('seq', '>', after)
        .orderBy('seq', 'asc')
        .limit(VERIFY_BATCH);
      if (rows.length === 0) return;
      const batch = rows.map(toEntry);
      yield batch;
      after = (batch.at(-1) as AuditEntry).seq;
    }
  }
}
