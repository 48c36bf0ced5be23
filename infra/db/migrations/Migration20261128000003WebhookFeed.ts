import { Migration } from '@mikro-orm/migrations';

/**
 * Webhook events are read from the sealed audit log: each webhook keeps the last entry of its org
 * it has been fed (`events_after_seq`), and its deliveries are written with that mark in one
 * transaction, so an event committed with its change cannot be lost or made twice. A webhook
 * starts at its org's last sealed entry; the ones that exist start there now. No default: a
 * webhook made without a place (by a process of the release before, during a rolling upgrade) is
 * given its org's last entry when first fed, not the org's whole past.
 */
export class Migration20261128000003WebhookFeed extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table webhooks add column events_after_seq bigint;
      update webhooks w set events_after_seq = coalesce(
        (select max(seq) from audit_entries e where e.org_id = w.org_id), 0);
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table webhooks drop column events_after_seq`);
  }
}
