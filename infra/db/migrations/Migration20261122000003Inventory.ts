import { Migration } from '@mikro-orm/migrations';

/** Credentials (sealed provider secrets), agents with their AGBOM state, and per-org prices. */
export class Migration20261122000003Inventory extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table credentials (
        ref text primary key,
        org_id text not null references orgs (id) deferrable initially deferred,
        name text not null,
        provider text not null,
        base_url text,
        sealed_secret text,
        key_id text not null,
        secret_hint text not null,
        version integer not null check (version >= 1),
        created_at timestamptz not null,
        created_by text not null,
        rotated_at timestamptz,
        deleted_at timestamptz,
        -- a deleted credential keeps its row for history, never its secret
        check (deleted_at is null or sealed_secret is null),
        check (deleted_at is not null or sealed_secret is not null)
      );
      create index credentials_org_idx on credentials (org_id, ref desc) where deleted_at is null;
      create index credentials_key_idx on credentials (key_id) where sealed_secret is not null;

      create table agents (
        id text primary key,
        org_id text not null references orgs (id) deferrable initially deferred,
        name text not null,
        description text,
        owner text,
        allowed_models text[] not null,
        tools jsonb not null,
        credential_refs text[] not null,
        metadata jsonb not null,
        status text not null check (status in ('active', 'suspended')),
        version integer not null check (version >= 1),
        created_at timestamptz not null,
        updated_at timestamptz not null,
        created_by text not null
      );
      create index agents_org_idx on agents (org_id, id desc);

      create table agbom_states (
        agent_id text primary key references agents (id) deferrable initially deferred,
        org_id text not null,
        content_hash text not null,
        bom_version integer not null,
        changed_at timestamptz not null
      );

      create table model_prices (
        org_id text not null references orgs (id) deferrable initially deferred,
        model text not null,
        input_micros_per_mtok bigint not null check (input_micros_per_mtok >= 0),
        output_micros_per_mtok bigint not null check (output_micros_per_mtok >= 0),
        updated_at timestamptz not null,
        updated_by text not null,
        primary key (org_id, model)
      );
    `);
  }
}
