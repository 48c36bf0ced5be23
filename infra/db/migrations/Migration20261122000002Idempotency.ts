import { Migration } from '@mikro-orm/migrations';

/** First responses of requests sent with an Idempotency-Key (sealed; kept 24 hours). */
export class Migration20261122000002Idempotency extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table idempotency_records (
        org_id text not null,
        key text not null,
        route text not null,
        request_hash text not null,
        response text,
        created_at timestamptz not null,
        expires_at timestamptz not null,
        primary key (org_id, key, route)
      );
      create index idempotency_records_expiry_idx on idempotency_records (expires_at);
    `);
  }
}
