import { Migration } from '@mikro-orm/migrations';

/**
 * Provider attempts recorded per invocation: each attempt reserves and settles under its own charge
 * id, and a write that ends an attempt applies once (see FINISH in infra/invocations/invocation-sql.ts).
 */
export class Migration20261123000001ProviderAttempts extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table invocations add column provider_attempts integer not null default 0;`);
    // Every invocation charged a call so far made exactly one attempt.
    this.addSql(`update invocations set provider_attempts = 1 where charged_calls > 0;`);
  }
}
