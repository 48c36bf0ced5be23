import type { Knex } from '@mikro-orm/knex';

/** The tables a request can add rows to. */
const TABLES = [
  'orgs',
  'users',
  'invites',
  'user_sessions',
  'api_keys',
  'credentials',
  'agents',
  'agbom_states',
  'model_prices',
  'sessions',
  'invocations',
  'decisions',
  'idempotency_records',
] as const;

/** Row counts of every table a request can write, to compare before and after a refused one. */
export async function storedRows(knex: Knex): Promise<Record<string, number>> {
  const counts = TABLES.map((t) => `(select count(*) from ${t})::int as ${t}`).join(', ');
  const { rows } = (await knex.raw(`select ${counts}`)) as { rows: Record<string, number>[] };
  return rows[0] ?? {};
}

/** Audit events a request wrote, sealed or still in the outbox. */
export async function auditOf(knex: Knex, requestId: string): Promise<{ action: string; outcome: string }[]> {
  const { rows } = (await knex.raw(
    `select action, outcome from audit_outbox where request_id = ?
     union all select action, outcome from audit_entries where request_id = ?`,
    [requestId, requestId],
  )) as { rows: { action: string; outcome: string }[] };
  return rows;
}
