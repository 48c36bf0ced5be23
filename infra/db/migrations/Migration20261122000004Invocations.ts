import { Migration } from '@mikro-orm/migrations';

/** Sessions with their caps and settled usage, governed invocations, and guardian decisions. */
export class Migration20261122000004Invocations extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table sessions (
        id text primary key,
        org_id text not null references orgs (id) deferrable initially deferred,
        agent_id text references agents (id) deferrable initially deferred,
        status text not null check (status in ('open', 'closed', 'expired')),
        max_cost_micros bigint not null check (max_cost_micros > 0),
        max_calls bigint check (max_calls > 0),
        max_tokens bigint check (max_tokens > 0),
        cost_micros bigint not null default 0 check (cost_micros >= 0),
        calls bigint not null default 0 check (calls >= 0),
        input_tokens bigint not null default 0 check (input_tokens >= 0),
        output_tokens bigint not null default 0 check (output_tokens >= 0),
        metadata jsonb not null,
        created_by text not null,
        created_at timestamptz not null,
        expires_at timestamptz not null,
        closed_at timestamptz,
        -- The last line of defence behind the Redis reservations: settled usage past a cap is
        -- refused by the database itself.
        constraint sessions_cost_cap check (cost_micros <= max_cost_micros),
        constraint sessions_calls_cap check (max_calls is null or calls <= max_calls),
        constraint sessions_tokens_cap check (max_tokens is null or input_tokens + output_tokens <= max_tokens)
      );
      create index sessions_org_idx on sessions (org_id, id desc);
      create index sessions_open_expiry_idx on sessions (expires_at) where status = 'open';

      create table invocations (
        id text primary key,
        org_id text not null,
        session_id text not null references sessions (id) deferrable initially deferred,
        agent_id text,
        requested_by_type text not null,
        requested_by text not null,
        status text not null check (status in
          ('queued', 'evaluating', 'awaiting_approval', 'running', 'succeeded', 'failed', 'denied', 'cancelled')),
        model text not null,
        provider text not null,
        credential_ref text not null,
        request jsonb not null,
        input_price_micros bigint not null,
        output_price_micros bigint not null,
        reserve_micros bigint not null,
        reserve_tokens bigint not null,
        decision jsonb,
        approval_id text,
        output jsonb,
        input_tokens bigint,
        output_tokens bigint,
        cost_micros bigint not null default 0,
        charged_calls integer not null default 0,
        error jsonb,
        request_id text,
        created_at timestamptz not null,
        updated_at timestamptz not null,
        completed_at timestamptz
      ) with (fillfactor = 70);
      create index invocations_org_idx on invocations (org_id, id desc);
      create index invocations_session_idx on invocations (session_id, id);
      create index invocations_agent_idx on invocations (agent_id, model, provider) where agent_id is not null;
      create index invocations_completed_idx on invocations (org_id, completed_at) where completed_at is not null;
      -- Unfinished invocations, for the reaper. Neither column changes when the guardian admits an
      -- invocation, so that update is HOT (no index touched); fillfactor leaves the page room for it.
      create index invocations_unfinished_idx on invocations (created_at) where completed_at is null;

      create table decisions (
        id text primary key,
        org_id text not null,
        invocation_id text,
        session_id text,
        agent_id text,
        verdict text not null check (verdict in ('allow', 'deny', 'modify', 'require_approval')),
        reasons jsonb not null,
        modified_action jsonb,
        policy_version integer not null,
        evaluated_at timestamptz not null
      );
      create index decisions_session_idx on decisions (session_id, evaluated_at) where session_id is not null;

      -- Event ids are 80 random bits; audit_entries.id stays unique. One index less per event written.
      alter table audit_outbox drop constraint audit_outbox_id_key;
    `);
  }
}
