import type { Knex } from '@mikro-orm/knex';
import type { AuditEvent } from '../../domain/audit/audit-event';
import type { Decision } from '../../domain/policy/decision';
import type {
  DecisionFilter,
  DecisionLog,
  DecisionPage,
  DecisionPosition,
} from '../../domain/policy/decision-log.port';
import { auditJson, auditRecordset, INSERT_AUDIT } from '../db/audit-rows';
import { decisionJson, toDecision, type DecisionRow } from '../invocations/invocation-rows';
import { decisionRecordset, INSERT_DECISIONS } from './decision-sql';

/** One statement: the decision and its audit event commit together or not at all. */
const RECORD = `
  with d as (${INSERT_DECISIONS} select * from ${decisionRecordset('?')} returning 1)
  ${INSERT_AUDIT} select * from ${auditRecordset('?')}`;

/** A reason list naming the policy, for jsonb containment (`@>`). */
const naming = (policyId: string): string => JSON.stringify([{ policy_id: policyId }]);

function applyFilter(query: Knex.QueryBuilder, filter: DecisionFilter): void {
  if (filter.agentId) query.andWhere({ agent_id: filter.agentId });
  if (filter.sessionId) query.andWhere({ session_id: filter.sessionId });
  if (filter.verdict) query.andWhere({ verdict: filter.verdict });
  const { policyId } = filter;
  if (policyId)
    query.andWhere((q) =>
      q
        .whereRaw('reasons @> ?::jsonb', [naming(policyId)])
        .orWhereRaw('shadow_reasons @> ?::jsonb', [naming(policyId)]),
    );
  if (filter.since) query.andWhere('evaluated_at', '>=', filter.since);
  if (filter.until) query.andWhere('evaluated_at', '<', filter.until);
}

/** The decision log in PostgreSQL, read newest first by (evaluated_at, id) (decisions_log_idx). */
export class PgDecisionLog implements DecisionLog {
  constructor(private readonly knex: Knex) {}

  async list(
    orgId: string,
    filter: DecisionFilter,
    page: { limit: number; after: DecisionPosition | null },
  ): Promise<DecisionPage> {
    const query = this.knex<DecisionRow>('decisions').where({ org_id: orgId });
    applyFilter(query, filter);
    if (page.after)
      query.andWhereRaw('(evaluated_at, id) < (?::timestamptz, ?::text)', [page.after.at, page.after.id]);
    const rows: DecisionRow[] = await query
      .orderBy([
        { column: 'evaluated_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .limit(page.limit + 1);
    const items = rows.slice(0, page.limit).map(toDecision);
    const last = rows.length > page.limit ? items.at(-1) : undefined;
    return { items, next: last ? { at: last.evaluatedAt, id: last.id } : null };
  }

  async get(orgId: string, id: string): Promise<Decision | null> {
    const row: DecisionRow | undefined = await this.knex('decisions').where({ org_id: orgId, id }).first();
    return row ? toDecision(row) : null;
  }

  async record(decision: Decision, event: AuditEvent): Promise<void> {
    await this.knex.raw(RECORD, [JSON.stringify([decisionJson(decision)]), auditJson([event])]);
  }
}
