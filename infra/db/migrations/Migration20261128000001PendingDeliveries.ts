import { Migration } from '@mikro-orm/migrations';

/**
 * The sweep of lost webhook deliveries reads pending rows only: a partial index keeps that read
 * small however many delivered ones accumulate.
 */
export class Migration20261128000001PendingDeliveries extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create index webhook_deliveries_pending_idx on webhook_deliveries (id) where status = 'pending'`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop index webhook_deliveries_pending_idx`);
  }
}
