import type { Knex } from '@mikro-orm/knex';
import type { AuditEvent } from '../../domain/audit/audit-event';
import { firstIdAt } from '../../domain/ids';
import type { Page, PageRequest } from '../../domain/model';
import type { SealedSecret } from '../../domain/ports';
import { WEBHOOK_DELETED, type Webhook, type WebhookDelivery } from '../../domain/webhooks/webhook';
import type {
  AttemptRecord,
  DeliveryStore,
  DeliveryTarget,
  NewDelivery,
  StoredWebhookSecret,
  WebhookSecretStore,
  WebhookStore,
} from '../../domain/webhooks/webhook-store.port';
import { auditJson, auditRecordset, INSERT_AUDIT } from '../db/audit-rows';
import {
  DELIVERY_COLUMNS,
  toDelivery,
  toWebhook,
  WEBHOOK_COLUMNS,
  type DeliveryRow,
  type WebhookRow,
} from './webhook-rows';

/** Keyset pages on time-ordered ids, newest first: one row more than asked tells whether more follow. */
function pageOf<R extends { id: string }, T>(rows: R[], page: PageRequest, map: (r: R) => T): Page<T> {
  const items = rows.slice(0, page.limit);
  const last = items.at(-1);
  return { items: items.map(map), nextAfter: rows.length > page.limit && last ? last.id : null };
}

/** Binding: org. The org's last sealed entry: where a webhook made now starts in its log. */
export const ORG_LAST_SEQ = '(select coalesce(max(seq), 0) from audit_entries where org_id = ?)';

/** Stores new deliveries; one stored already (a retry after a lost answer) is left as it is. */
export const insertDeliveries = (knex: Knex, deliveries: NewDelivery[]) =>
  knex('webhook_deliveries')
    .insert(
      deliveries.map((d) => ({
        id: d.id,
        org_id: d.orgId,
        webhook_id: d.webhookId,
        type: d.type,
        payload: JSON.stringify(d.data),
        status: 'pending',
        attempts: 0,
        created_at: d.createdAt,
      })),
    )
    .onConflict('id')
    .ignore();

const recordAudit = (trx: Knex.Transaction, events: AuditEvent[]) =>
  trx.raw(`${INSERT_AUDIT} select * from ${auditRecordset('?')}`, [auditJson(events)]);

/** Webhooks and their deliveries in PostgreSQL. */
export class PgWebhookStore implements WebhookStore, DeliveryStore, WebhookSecretStore {
  constructor(private readonly knex: Knex) {}

  create(webhook: Webhook, secret: SealedSecret, event: AuditEvent, most: number): Promise<boolean> {
    return this.knex.transaction(async (trx) => {
      // The org's row lock queues concurrent creations, so the count is exact; `no key update`
      // leaves alone the inserts whose foreign keys name the org.
      await trx.raw('select 1 from orgs where id = ? for no key update', [webhook.orgId]);
      const [{ live }] = (await this.live(webhook.orgId, trx).count({ live: '*' })) as [
        { live: string | number },
      ];
      if (Number(live) >= most) return false;
      await trx('webhooks').insert({
        id: webhook.id,
        org_id: webhook.orgId,
        url: webhook.url,
        events: webhook.events,
        description: webhook.description,
        sealed_secret: secret.sealed,
        key_id: secret.keyId,
        created_at: webhook.createdAt,
        // It is fed the org's events from its last sealed entry on (those sealed later).
        events_after_seq: trx.raw(ORG_LAST_SEQ, [webhook.orgId]),
      });
      await recordAudit(trx, [event]);
      return true;
    });
  }

  async get(orgId: string, id: string): Promise<Webhook | null> {
    const row: WebhookRow | undefined = await this.live(orgId).andWhere({ id }).first(WEBHOOK_COLUMNS);
    return row ? toWebhook(row) : null;
  }

  async list(orgId: string, page: PageRequest): Promise<Page<Webhook>> {
    const query = this.live(orgId)
      .select(WEBHOOK_COLUMNS)
      .orderBy('id', 'desc')
      .limit(page.limit + 1);
    if (page.after) query.andWhere('id', '<', page.after);
    return pageOf((await query) as WebhookRow[], page, toWebhook);
  }

  delete(orgId: string, id: string, at: Date, event: (w: Webhook) => AuditEvent): Promise<Webhook | null> {
    return this.knex.transaction(async (trx) => {
      const [row] = (await trx('webhooks')
        .where({ org_id: orgId, id })
        .whereNull('deleted_at')
        .update({ deleted_at: at, sealed_secret: null })
        .returning(WEBHOOK_COLUMNS)) as WebhookRow[];
      if (!row) return null;
      await trx('webhook_deliveries')
        .where({ webhook_id: id, status: 'pending' })
        .update({ status: 'failed', last_error: WEBHOOK_DELETED });
      const webhook = toWebhook(row);
      await recordAudit(trx, [event(webhook)]);
      return webhook;
    });
  }

  resealBatch(
    keyId: string,
    limit: number,
    reseal: (stored: StoredWebhookSecret) => { secret: SealedSecret; event: AuditEvent },
  ): Promise<number> {
    return this.knex.transaction(async (trx) => {
      const rows: { id: string; org_id: string; url: string; sealed_secret: string; key_id: string }[] =
        await trx('webhooks')
          .select('id', 'org_id', 'url', 'sealed_secret', 'key_id')
          .whereNull('deleted_at')
          .whereNotNull('sealed_secret')
          .andWhereNot('key_id', keyId)
          .orderBy('id')
          .limit(limit)
          .forUpdate()
          .skipLocked();
      const events: AuditEvent[] = [];
      for (const row of rows) {
        const webhook = { orgId: row.org_id, id: row.id, url: row.url };
        const { secret, event } = reseal({
          webhook,
          secret: { keyId: row.key_id, sealed: row.sealed_secret },
        });
        await trx('webhooks')
          .where({ id: row.id })
          .update({ sealed_secret: secret.sealed, key_id: secret.keyId });
        events.push(event);
      }
      if (events.length > 0) await recordAudit(trx, events);
      return rows.length;
    });
  }

  async deliveries(orgId: string, webhookId: string, page: PageRequest): Promise<Page<WebhookDelivery>> {
    const query = this.knex('webhook_deliveries')
      .select(DELIVERY_COLUMNS)
      .where({ org_id: orgId, webhook_id: webhookId })
      .orderBy('id', 'desc')
      .limit(page.limit + 1);
    if (page.after) query.andWhere('id', '<', page.after);
    return pageOf((await query) as DeliveryRow[], page, toDelivery);
  }

  async addDeliveries(deliveries: NewDelivery[]): Promise<void> {
    await insertDeliveries(this.knex, deliveries);
  }

  async pendingBefore(before: Date, after: string | null, limit: number) {
    const query = this.knex('webhook_deliveries')
      .select('id', 'org_id', 'webhook_id')
      .where('status', 'pending')
      .andWhere('created_at', '<', before)
      .orderBy('id')
      .limit(limit);
    if (after) query.andWhere('id', '>', after);
    const rows: { id: string; org_id: string; webhook_id: string }[] = await query;
    return rows.map((r) => ({ id: r.id, orgId: r.org_id, webhookId: r.webhook_id }));
  }

  /**
   * The id bound lets the primary key find the oldest rows without reading the whole table (ids
   * start with their creation time); created_at decides.
   */
  async deleteEndedBefore(before: Date, limit: number): Promise<number> {
    const result = await this.knex.raw<{ rowCount: number | null }>(
      `delete from webhook_deliveries where id in (
         select id from webhook_deliveries
         where id < ? and created_at < ? and status <> 'pending'
         order by id limit ?)`,
      [firstIdAt('msg', before), before, limit],
    );
    return result.rowCount ?? 0;
  }

  async target(orgId: string, deliveryId: string): Promise<DeliveryTarget | null> {
    const row = (await this.knex('webhook_deliveries as d')
      .join('webhooks as w', 'w.id', 'd.webhook_id')
      .where({ 'd.org_id': orgId, 'd.id': deliveryId })
      .first([
        ...DELIVERY_COLUMNS.map((c) => `d.${c}`),
        'd.payload',
        'w.url',
        'w.sealed_secret',
        'w.key_id',
      ])) as
      | (DeliveryRow & { payload: unknown; url: string; sealed_secret: string | null; key_id: string })
      | undefined;
    if (!row) return null;
    return {
      delivery: toDelivery(row),
      data: row.payload,
      url: row.url,
      secret: row.sealed_secret === null ? null : { keyId: row.key_id, sealed: row.sealed_secret },
    };
  }

  async startAttempt(orgId: string, deliveryId: string): Promise<boolean> {
    const updated = await this.knex('webhook_deliveries')
      .where({ org_id: orgId, id: deliveryId, status: 'pending' })
      .update({ attempts: this.knex.raw('attempts + 1') });
    return updated > 0;
  }

  async recordAttempt(orgId: string, deliveryId: string, attempt: AttemptRecord): Promise<boolean> {
    const updated = await this.knex('webhook_deliveries')
      .where({ org_id: orgId, id: deliveryId, status: 'pending' })
      .update({
        status: attempt.status,
        last_status_code: attempt.statusCode,
        last_error: attempt.error,
        last_attempt_at: attempt.at,
        delivered_at: attempt.status === 'delivered' ? attempt.at : null,
      });
    return updated > 0;
  }

  async end(orgId: string, deliveryId: string, error: string): Promise<void> {
    await this.knex('webhook_deliveries')
      .where({ org_id: orgId, id: deliveryId, status: 'pending' })
      .update({ status: 'failed', last_error: error });
  }

  private live(orgId: string, db: Knex = this.knex) {
    return db('webhooks').where({ org_id: orgId }).whereNull('deleted_at');
  }
}
