import { Migration } from '@mikro-orm/migrations';

/**
 * Signed webhooks: an org's subscriptions, each with its signing secret sealed under the master
 * keyring (destroyed on delete, when the row stays as a tombstone), and one delivery row per event
 * and webhook, whose id is the `webhook-id` every attempt carries. Both lists read newest first.
 */
export class Migration20261127000002Webhooks extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table webhooks (
        id text primary key,
        org_id text not null references orgs (id),
        url text not null,
        events text[] not null check (cardinality(events) > 0),
        description text,
        sealed_secret text,
        key_id text not null,
        created_at timestamptz not null,
        deleted_at timestamptz,
        check ((deleted_at is null) = (sealed_secret is not null))
      );
      create index webhooks_live_idx on webhooks (org_id, id desc) where deleted_at is null;

      create table webhook_deliveries (
        id text primary key,
        org_id text not null references orgs (id),
        webhook_id text not null references webhooks (id),
        type text not null,
        payload jsonb not null,
        status text not null default 'pending' check (status in ('pending', 'delivered', 'failed')),
        attempts integer not null default 0,
        last_status_code integer,
        last_error text check (char_length(last_error) <= 200),
        created_at timestamptz not null,
        last_attempt_at timestamptz,
        delivered_at timestamptz,
        check ((status = 'delivered') = (delivered_at is not null))
      );
      create index webhook_deliveries_list_idx on webhook_deliveries (webhook_id, id desc);
    `);
  }
}
