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
 * Sealed entries, one JSON parameter for the whole batch (`?`, knex). A multi-row insert binds
 * fourteen parameters per entry, and knex building and pg sending them cost about a sixth of the
 * sealer's CPU (`npm run bench:seal`).
 */
export const INSERT_ENTRIES = `insert into audit_entries (${EVENT_COLUMNS}, seq, prev_hash, hash)
  select * from json_to_recordset(?::json) as a(${EVENT_TYPES}, seq bigint, prev_hash text, hash text)`;

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
