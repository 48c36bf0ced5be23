import { Migration } from '@mikro-orm/migrations';

/** Orgs, identity, API keys and the audit log (outbox, sealed chain, heads). */
export class Migration20261122000001Foundation extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table orgs (
        id text primary key,
        name text not null,
        created_at timestamptz not null
      );

      create table users (
        id text primary key,
        org_id text not null references orgs (id) deferrable initially deferred,
        email text not null unique,
        name text,
        role text not null check (role in ('owner', 'admin', 'approver', 'viewer')),
        password_hash text not null,
        created_at timestamptz not null
      );
      create index users_org_idx on users (org_id);

      create table api_keys (
        id text primary key,
        org_id text not null references orgs (id) deferrable initially deferred,
        name text not null,
        prefix text not null,
        secret_hash text not null unique,
        scopes text[] not null,
        created_at timestamptz not null,
        expires_at timestamptz not null,
        last_used_at timestamptz,
        revoked_at timestamptz,
        created_by text,
        replaced_by text
      );
      create index api_keys_org_idx on api_keys (org_id, id desc);

      create table user_sessions (
        id text primary key,
        org_id text not null references orgs (id) deferrable initially deferred,
        user_id text not null references users (id) deferrable initially deferred,
        token_hash text not null unique,
        created_at timestamptz not null,
        expires_at timestamptz not null,
        revoked_at timestamptz
      );

      create table invites (
        id text primary key,
        org_id text not null references orgs (id) deferrable initially deferred,
        email text not null,
        role text not null,
        token_hash text not null unique,
        created_by text not null,
        created_at timestamptz not null,
        expires_at timestamptz not null,
        accepted_at timestamptz
      );

      create table audit_outbox (
        pos bigserial primary key,
        id text not null unique,
        org_id text not null,
        at timestamptz not null,
        actor_type text not null,
        actor_id text not null,
        action text not null,
        resource_type text not null,
        resource_id text not null,
        outcome text not null,
        details jsonb not null,
        request_id text
      );
      create index audit_outbox_org_idx on audit_outbox (org_id, pos);

      create table audit_heads (
        org_id text primary key,
        seq bigint not null,
        hash text not null,
        sealed_at timestamptz not null
      );

      create table audit_entries (
        org_id text not null,
        seq bigint not null,
        id text not null unique,
        at timestamptz not null,
        actor_type text not null,
        actor_id text not null,
        action text not null,
        resource_type text not null,
        resource_id text not null,
        outcome text not null,
        details jsonb not null,
        request_id text,
        prev_hash text not null,
        hash text not null,
        primary key (org_id, seq)
      );
      create index audit_entries_action_idx on audit_entries (org_id, action, seq desc);
      create index audit_entries_actor_idx on audit_entries (org_id, actor_id, seq desc);
      create index audit_entries_resource_idx on audit_entries (org_id, resource_id, seq desc);
      create index audit_entries_at_idx on audit_entries (org_id, at);

      -- The sealed log is append-only: the database itself refuses to change or remove an entry.
      create function audit_entries_refuse_change() returns trigger language plpgsql as $$
      begin
        raise exception '% is append-only: % refused', tg_table_name, tg_op using errcode = 'insufficient_privilege';
      end
      $$;
      create trigger audit_entries_no_update_delete before update or delete on audit_entries
        for each row execute function audit_entries_refuse_change();
      create trigger audit_entries_no_truncate before truncate on audit_entries
        for each statement execute function audit_entries_refuse_change();

      -- Signed chain heads (HMAC under a key derived from CP_MASTER_KEY), append-only too.
      create table audit_checkpoints (
        org_id text not null,
        seq bigint not null,
        hash text not null,
        key_id text not null,
        signature text not null,
        at timestamptz not null default now(),
        primary key (org_id, seq)
      );
      create trigger audit_checkpoints_no_update_delete before update or delete on audit_checkpoints
        for each row execute function audit_entries_refuse_change();
      create trigger audit_checkpoints_no_truncate before truncate on audit_checkpoints
        for each statement execute function audit_entries_refuse_change();
    `);
  }
}
