import type { AuditEvent } from '../../domain/audit/audit-event';

const EVENT_COLUMNS = `id, org_id, at, actor_type, actor_id, action, resource_type, resource_id, outcome,
  details, request_id`;
const EVENT_TYPES = `id text, org_id text, at timestamptz, actor_type text, actor_id text, action text,
  resource_type text, resource_id text, outcome text, details jsonb, request_id text`;

/**
 * Audit events as one JSON parameter, for statements that insert them beside the change they
 * record (same statement, same transaction): `${INSERT_AUDIT} select * from ${auditRecordset('$2')}`
 * (or '?' under knex).
 */
export const INSERT_AUDIT = `insert into audit_outbox (${EVENT_COLUMNS})`;

export const auditRecordset = (param: string): string =>
  `json_to_recordset(${param}::json) as a(${EVENT_TYPES})`;

/**
 * `?` (knex): JSON of `{id, seq, prev_hash, hash}`, one per sealed event. Moves those events from the
 * outbox into the sealed log inside PostgreSQL, so only their links travel: sending whole entries
 * back as JSON cost the sealer its serialization and PostgreSQL its parse (`npm run bench:seal`,
 * four alternations: 34-45 against 44-63 µs of sealer CPU per event, 31-43 against 38-49 in
 * PostgreSQL). An entry is its outbox row as written; the hash covers that row as the sealer read
 * it, the same values for everything the service writes (JSON made by JavaScript, millisecond
 * times), and verify reads entries the same way. Counts the entries written: fewer than sent means
 * the outbox changed, which the head lock rules out, so the sealer refuses the whole batch.
 */
export const MOVE_TO_ENTRIES = `
  with links as (select * from json_to_recordset(?::json) as l(id text, seq bigint, prev_hash text, hash text)),
  moved as (delete from audit_outbox o using links l where o.id = l.id returning o.*),
  written as (
    insert into audit_entries (${EVENT_COLUMNS}, seq, prev_hash, hash)
    select ${EVENT_COLUMNS}, seq, prev_hash, hash from moved join links using (id)
    returning 1
  )
  select count(*)::int as n from written`;

/** An event's columns, shared by the outbox and the sealed entries. */
export const eventColumns = (e: AuditEvent) => ({
  id: e.id,
  org_id: e.orgId,
  at: e.at,
  actor_type: e.actor.type,
  actor_id: e.actor.id,
  action: e.action,
  resource_type: e.resource.type,
  resource_id: e.resource.id,
  outcome: e.outcome,
  details: e.details,
  request_id: e.requestId,
});

export const auditJson = (events: AuditEvent[]): string => JSON.stringify(events.map(eventColumns));
