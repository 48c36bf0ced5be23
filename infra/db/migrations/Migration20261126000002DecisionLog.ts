import { Migration } from '@mikro-orm/migrations';

/**
 * The decision log: each decision keeps what shadow policies would have decided and the SHA-256 of
 * the action it decided (never the prompt text), and an org's decisions are read newest first.
 */
export class Migration20261126000002DecisionLog extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table decisions
        add column shadow_reasons jsonb not null default '[]',
        add column action_digest text;
      create index decisions_log_idx on decisions (org_id, evaluated_at desc, id desc);
    `);
  }
}
