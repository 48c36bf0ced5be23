import type { Knex } from '@mikro-orm/knex';
import type { PlanDeliveries, WebhookFeedStore } from '../../domain/webhooks/feed-webhooks';
import { EVENT_ACTIONS, type WebhookEventType } from '../../domain/webhooks/webhook-events';
import { insertDeliveries, ORG_LAST_SEQ } from './pg-webhook-store';

/**
 * A live webhook with no place yet (made by the release before), or with an entry past its place
 * whose action tells of an event it subscribes to: one probe of (org_id, action, seq) per action,
 * so a webhook whose org logs only other actions costs no step.
 */
const BEHIND = `
  select w.id from webhooks w
  where w.deleted_at is null and (w.events_after_seq is null or exists (
    select 1 from unnest(w.events) as ev, json_array_elements_text((?::json) -> ev) as act
    join audit_entries e on e.org_id = w.org_id and e.action = act and e.seq > w.events_after_seq))
  order by w.id`;

/**
 * Bindings: org, org, after, actions (JSON array), limit. The org's last entry and the entries past
 * `after` with those actions, in one statement so both are of one snapshot: an entry sealed between
 * two statements could be passed over by the place moved to the last entry.
 */
const STEP = `
  select ${ORG_LAST_SEQ}::text as last,
    coalesce((
      select json_agg(json_build_object('seq', e.seq::text, 'action', e.action, 'resource_id', e.resource_id)
        order by e.seq)
      from (
        select seq, action, resource_id from audit_entries
        where org_id = ? and seq > ? and action in (select json_array_elements_text(?::json))
        order by seq limit ?
      ) e
    ), '[]'::json) as changes`;

interface StepRow {
  last: string;
  changes: { seq: string; action: string; resource_id: string }[];
}

/** Each webhook's place in its org's sealed audit log, in its row (`events_after_seq`). */
export class PgWebhookFeed implements WebhookFeedStore {
  constructor(private readonly knex: Knex) {}

  async behind(): Promise<string[]> {
    const { rows } = await this.knex.raw<{ rows: { id: string }[] }>(BEHIND, [JSON.stringify(EVENT_ACTIONS)]);
    return rows.map((r) => r.id);
  }

  advance(webhookId: string, limit: number, plan: PlanDeliveries) {
    return this.knex.transaction(async (trx) => {
      const webhook = (await trx('webhooks')
        .where({ id: webhookId })
        .whereNull('deleted_at')
        .forUpdate()
        .skipLocked()
        .first('id', 'org_id', 'events', 'events_after_seq')) as
        | { id: string; org_id: string; events: WebhookEventType[]; events_after_seq: string | null }
        | undefined;
      if (!webhook) return null;
      if (webhook.events_after_seq === null) {
        // Made without a place (by the release before): it starts at its org's last entry.
        await trx.raw(`update webhooks set events_after_seq = ${ORG_LAST_SEQ} where id = ?`, [
          webhook.org_id,
          webhookId,
        ]);
        return { deliveries: [], more: false };
      }
      const after = Number(webhook.events_after_seq);
      const actions = JSON.stringify(webhook.events.flatMap((type) => EVENT_ACTIONS[type] ?? []));
      const {
        rows: [step],
      } = await trx.raw<{ rows: StepRow[] }>(STEP, [webhook.org_id, webhook.org_id, after, actions, limit]);
      const changes = step!.changes.map((c) => ({
        seq: Number(c.seq),
        action: c.action,
        resourceId: c.resource_id,
      }));
      const more = changes.length === limit;
      const through = more ? changes[changes.length - 1]!.seq : Number(step!.last);
      const fed = { id: webhook.id, orgId: webhook.org_id, events: webhook.events };
      const deliveries = await plan(fed, changes);
      if (deliveries.length > 0) await insertDeliveries(trx, deliveries);
      if (through > after)
        await trx('webhooks').where({ id: webhookId }).update({ events_after_seq: through });
      return { deliveries, more };
    });
  }
}
