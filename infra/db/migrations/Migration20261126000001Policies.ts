import { Migration } from '@mikro-orm/migrations';

/**
 * The org's policies and its policy_version: one counter per org, bumped in the transaction of
 * every policy change (a row lock on the org serializes writers, so versions are gapless).
 * Deleted policies keep their row (deleted_at) so decisions that name them stay traceable.
 */
export class Migration20261126000001Policies extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table orgs add column policy_version bigint not null default 0;

      create table policies (
        id text primary key,
        org_id text not null references orgs (id) deferrable initially deferred,
        name text not null,
        description text,
        enabled boolean not null,
        priority integer not null,
        mode text not null check (mode in ('enforce', 'shadow')),
        applies_to jsonb not null,
        rules jsonb not null check (jsonb_typeof(rules) = 'array'),
        version integer not null check (version >= 1),
        created_at timestamptz not null,
        updated_at timestamptz not null,
        deleted_at timestamptz
      );
      create index policies_org_idx on policies (org_id, id desc) where deleted_at is null;
    `);
  }
}
