import { Migration } from '@mikro-orm/migrations';

/**
 * Stored Idempotency-Key responses belong to the principal that made the request (an API key id
 * or a user id): a response can hold a secret shown once. Rows from before have no known
 * principal ('') and are replayed to no one; they expire within 24 hours.
 */
export class Migration20261124000001IdempotencyPrincipal extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table idempotency_records add column principal_id text not null default '';
      alter table idempotency_records alter column principal_id drop default;
      alter table idempotency_records drop constraint idempotency_records_pkey;
      alter table idempotency_records add primary key (org_id, principal_id, key, route);
    `);
  }
}
