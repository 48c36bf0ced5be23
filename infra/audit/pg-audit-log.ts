import type { Knex } from '@mikro-orm/knex';
import type { AuditEntry, AuditEvent } from '../../domain/audit/audit-event';
import type { AuditFilter, AuditLog, AuditPage } from '../../domain/audit/audit-log';
import { GENESIS_HASH, sealEvents } from '../../domain/audit/hash-chain';

const SEAL_BATCH = 500;
const VERIFY_BATCH = 1000;

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

const toEntryRow = (e: AuditEntry) => ({
  org_id: e.orgId,
  seq: e.seq,
  id: e.id,
  at: e.at,
  actor_type: e.actor.type,
  actor_id: e.actor.id,
  action: e.action,
  resource_type: e.resource.type,
  resource_id: e.resource.id,
  outcome: e.outcome,
  details: JSON.stringify(e.details),
  request_id: e.requestId,
  prev_hash: e.prevHash,
  hash: e.hash,
});

/**
 * The audit log in PostgreSQL. Changes insert events into audit_outbox in their own
 * transactions (no lock shared between writers); sealing moves them into audit_entries under
 * the org's head row lock, so each org has one chain writer at a time and the chain never forks.
 */
export class PgAuditLog implements AuditLog {
  constructor(private readonly knex: Knex) {}

  async seal(orgId: string): Promise<number> {
    let total = 0;
    for (;;) {
      const sealed = await this.sealBatch(orgId);
      total += sealed;
      if (sealed < SEAL_BATCH) return total;
    }
  }

  /** Seals every org that has pending events; what the background job runs. */
  async sealAll(): Promise<number> {
    const orgs: { org_id: string }[] = await this.knex('audit_outbox').distinct('org_id');
    let total = 0;
    for (const { org_id } of orgs) total += await this.seal(org_id);
    return total;
  }

  private sealBatch(orgId: string): Promise<number> {
    return this.knex.transaction(async (trx) => {
      await trx.raw(
        `insert into audit_heads (org_id, seq, hash, sealed_at) values (?, 0, ?, now()) on conflict do nothing`,
        [orgId, GENESIS_HASH],
      );
      const head = await trx('audit_heads')
        .where({ org_id: orgId })
        .forUpdate()
        .first<{ seq: string; hash: string }>();
      const { rows } = await trx.raw<{ rows: (EventRow & { pos: string })[] }>(
        `delete from audit_outbox where pos in
           (select pos from audit_outbox where org_id = ? order by pos limit ?)
         returning *`,
        [orgId, SEAL_BATCH],
      );
      if (!head || rows.length === 0) return 0;
      rows.sort((a, b) => Number(a.pos) - Number(b.pos));
      const entries = sealEvents({ seq: Number(head.seq), hash: head.hash }, rows.map(toEvent));
      await trx('audit_entries').insert(entries.map(toEntryRow));
      const last = entries.at(-1) as AuditEntry;
      await trx('audit_heads')
        .where({ org_id: orgId })
        .update({ seq: last.seq, hash: last.hash, sealed_at: trx.fn.now() });
      return entries.length;
    });
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

  async *inOrder(orgId: string): AsyncIterable<AuditEntry[]> {
    let after = 0;
    for (;;) {
      const rows: EntryRow[] = await this.knex('audit_entries')
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
