import { Migration } from '@mikro-orm/migrations';

/**
 * Human approvals: one per invocation a `require_approval` verdict paused, with the digest of the
 * request it would run and the policy_version that asked; votes are their own rows, one per
 * identity (the primary key refuses a second), and are never changed or deleted.
 */
export class Migration20261127000001Approvals extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table approvals (
        id text primary key,
        org_id text not null references orgs (id),
        invocation_id text not null unique references invocations (id) deferrable initially deferred,
        session_id text not null,
        agent_id text,
        policy_id text not null,
        policy_version integer not null,
        request_digest text not null,
        summary jsonb not null,
        requested_by_type text not null,
        requested_by text not null,
        approvers_required integer not null check (approvers_required between 1 and 20),
        status text not null default 'pending'
          check (status in ('pending', 'approved', 'rejected', 'expired', 'cancelled')),
        created_at timestamptz not null,
        expires_at timestamptz not null,
        resolved_at timestamptz,
        check ((status = 'pending') = (resolved_at is null))
      );
      create index approvals_queue_idx on approvals (org_id, created_at, id);
      create index approvals_due_idx on approvals (expires_at) where status = 'pending';

      create table approval_votes (
        approval_id text not null references approvals (id),
        voter_type text not null,
        voter_id text not null,
        decision text not null check (decision in ('approve', 'reject')),
        comment text,
        at timestamptz not null,
        primary key (approval_id, voter_type, voter_id)
      );

      create function approval_votes_immutable() returns trigger language plpgsql as $$
      begin
        raise exception 'approval votes are never changed or deleted';
      end $$;
      create trigger approval_votes_immutable before update or delete on approval_votes
        for each row execute function approval_votes_immutable();
    `);
  }
}
