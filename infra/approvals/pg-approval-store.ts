import type { Knex } from '@mikro-orm/knex';
import type { Approval } from '../../domain/approvals/approval';
import type {
  ApprovalChange,
  ApprovalFilter,
  ApprovalPage,
  ApprovalStore,
  Decision,
  LockedApproval,
  QueuePosition,
  StrandedApproval,
  StrandedScope,
} from '../../domain/approvals/approval-store';
import { auditJson, auditRecordset, INSERT_AUDIT } from '../db/audit-rows';
import { storeError } from '../invocations/stored-error';
import { chargedOf, type ChargedColumns } from '../invocations/invocation-rows';
import type { LineageSource } from '../../domain/approvals/voter-lineage';
import { approvalSelect } from './approval-sql';
import { PgKeyLineage } from './pg-key-lineage';
import { toApproval, type ApprovalRow } from './approval-rows';
import type { InvocationTotals } from '../../domain/invocations/outcomes';
import type { Provider } from '../../domain/providers';

type Rows<T> = { rows: T[] };

const ENDS = new Set(['denied', 'cancelled', 'failed']);

/** Approvals in PostgreSQL; every resolution runs under row locks, invocation first, then approval. */
export class PgApprovalStore implements ApprovalStore {
  constructor(private readonly knex: Knex) {}

  /**
   * A page of approvals by (created_at, id): newest first (the API's convention), or oldest first
   * on request (a queue worked from its head). The cursor is the last position of the page before.
   */
  async list(
    orgId: string,
    filter: ApprovalFilter,
    page: ApprovalPage,
    now: Date,
  ): Promise<{ items: Approval[]; next: QueuePosition | null }> {
    const oldestFirst = page.order === 'oldest';
    const where = ['ap.org_id = ?'];
    const values: Knex.Value[] = [orgId];
    const add = (clause: string, value: Knex.Value) => (where.push(clause), values.push(value));
    // As approvalAsOf reads them: a pending approval past its time is expired.
    if (filter.status === 'pending') add(`ap.status = 'pending' and ap.expires_at > ?`, now);
    else if (filter.status === 'expired')
      add(`(ap.status = 'expired' or (ap.status = 'pending' and ap.expires_at <= ?))`, now);
    else if (filter.status) add('ap.status = ?', filter.status);
    if (filter.agentId) add('ap.agent_id = ?', filter.agentId);
    if (filter.sessionId) add('ap.session_id = ?', filter.sessionId);
    if (filter.policyId) add('ap.policy_id = ?', filter.policyId);
    if (page.after) {
      where.push(`(ap.created_at, ap.id) ${oldestFirst ? '>' : '<'} (?::timestamptz, ?::text)`);
      values.push(page.after.at, page.after.id);
    }
    const direction = oldestFirst ? 'asc' : 'desc';
    const sql = `${approvalSelect(false)} where ${where.join(' and ')} order by ap.created_at ${direction}, ap.id ${direction} limit ?`;
    const { rows } = (await this.knex.raw(sql, [...values, page.limit + 1])) as Rows<ApprovalRow>;
    const items = rows.slice(0, page.limit).map(toApproval);
    const last = rows.length > page.limit ? items.at(-1) : undefined;
    return { items, next: last ? { at: last.createdAt, id: last.id } : null };
  }

  async get(orgId: string, id: string, withRequest = true): Promise<Approval | null> {
    const { rows } = (await this.knex.raw(
      `${approvalSelect(withRequest)} where ap.org_id = ? and ap.id = ?`,
      [orgId, id],
    )) as Rows<ApprovalRow>;
    return rows[0] ? toApproval(rows[0]) : null;
  }

  async pastExpiry(before: Date, limit: number): Promise<{ id: string; orgId: string }[]> {
    const rows: { id: string; org_id: string }[] = await this.knex('approvals')
      .select('id', 'org_id')
      .where('status', 'pending')
      .andWhere('expires_at', '<', before)
      .orderBy('expires_at')
      .limit(limit);
    return rows.map((r) => ({ id: r.id, orgId: r.org_id }));
  }

  async stranded(now: Date, limit: number, scope?: StrandedScope): Promise<StrandedApproval[]> {
    const narrow = narrowStranded(scope);
    // A credential is deleted by dropping its secret; a ref with no row at all cannot open either.
    const { rows } = (await this.knex.raw(
      `select ap.id, ap.org_id, ap.invocation_id from approvals ap
         join sessions s on s.id = ap.session_id
         join invocations i on i.id = ap.invocation_id
         left join credentials c on c.ref = i.credential_ref and c.org_id = ap.org_id
         left join api_keys k on ap.requested_by_type = 'api_key' and k.id = ap.requested_by
       where ap.status = 'pending' and ap.expires_at > ? ${narrow.sql}
         and (s.status <> 'open' or s.expires_at <= ? or k.revoked_at <= ? or k.expires_at <= ?
              or c.sealed_secret is null)
       order by ap.created_at, ap.id limit ?`,
      [now, ...narrow.values, now, now, now, limit],
    )) as Rows<{ id: string; org_id: string; invocation_id: string }>;
    return rows.map((r) => ({ id: r.id, orgId: r.org_id, invocationId: r.invocation_id }));
  }

  change<T>(
    orgId: string | null,
    id: string,
    decide: (locked: LockedApproval, lineage: LineageSource) => Promise<Decision<T>>,
  ): Promise<{ approval: Approval; result: T } | null> {
    return this.knex.transaction(async (trx) => {
      const locked = await lock(trx, orgId, id);
      if (!locked) return null;
      // On the transaction's own connection: waiting voters hold the pool's others.
      const { change, result } = await decide(locked, new PgKeyLineage(trx));
      if (change) await write(trx, locked.approval, change);
      const approval = change ? await reread(trx, id) : locked.approval;
      return { approval, result };
    });
  }
}

/** The filter `stranded` adds for a scope: one session, one requesting key, or one credential. */
function narrowStranded(scope: StrandedScope | undefined): { sql: string; values: string[] } {
  if (scope === undefined) return { sql: '', values: [] };
  if ('sessionId' in scope)
    return { sql: 'and ap.org_id = ? and ap.session_id = ?', values: [scope.orgId, scope.sessionId] };
  if ('keyId' in scope)
    return {
      sql: `and ap.org_id = ? and ap.requested_by_type = 'api_key' and ap.requested_by = ?`,
      values: [scope.orgId, scope.keyId],
    };
  return { sql: 'and ap.org_id = ? and i.credential_ref = ?', values: [scope.orgId, scope.credentialRef] };
}

/**
 * Locks the invocation, then the approval: the order every writer of both takes (a cancel's
 * invocation write included), so two resolutions never deadlock, they queue.
 */
async function lock(trx: Knex.Transaction, orgId: string | null, id: string): Promise<LockedApproval | null> {
  const { rows: inv } = (await trx.raw(
    `select i.status, i.session_id, i.model, i.provider, i.input_tokens, i.output_tokens, i.cost_micros,
       i.charged_calls, i.provider_attempts
     from invocations i
     where i.id = (select invocation_id from approvals where id = ? and (?::text is null or org_id = ?))
     for update of i`,
    [id, orgId, orgId],
  )) as Rows<TotalsRow>;
  const invocation = inv[0];
  if (!invocation) return null;
  await trx.raw('select 1 from approvals where id = ? for update', [id]);
  return {
    approval: await reread(trx, id),
    invocationStatus: invocation.status,
    invocationTotals: totalsOf(invocation),
  };
}

type TotalsRow = ChargedColumns & { status: string; session_id: string; model: string; provider: Provider };

const totalsOf = (r: TotalsRow): InvocationTotals => ({
  sessionId: r.session_id,
  model: r.model,
  provider: r.provider,
  ...chargedOf(r),
});

async function reread(trx: Knex.Transaction, id: string): Promise<Approval> {
  const { rows } = (await trx.raw(`${approvalSelect(false)} where ap.id = ?`, [id])) as Rows<ApprovalRow>;
  if (!rows[0]) throw new Error(`approval ${id} vanished inside its own transaction`);
  return toApproval(rows[0]);
}

async function write(trx: Knex.Transaction, approval: Approval, change: ApprovalChange): Promise<void> {
  const { vote } = change;
  if (vote)
    await trx('approval_votes').insert({
      approval_id: approval.id,
      voter_type: vote.by.type,
      voter_id: vote.by.id,
      decision: vote.decision,
      comment: vote.comment,
      at: vote.at,
    });
  if (change.status)
    await trx('approvals')
      .where({ id: approval.id, status: 'pending' })
      .update({ status: change.status, resolved_at: change.at });
  if (change.invocation) await moveInvocation(trx, approval, change);
  if (change.events.length)
    await trx.raw(`${INSERT_AUDIT} select * from ${auditRecordset('?')}`, [auditJson(change.events)]);
}

/** The paused invocation resumes (to the invoke stage) or ends; it must still be paused. */
async function moveInvocation(trx: Knex.Transaction, approval: Approval, change: ApprovalChange) {
  const next = change.invocation as NonNullable<ApprovalChange['invocation']>;
  const error = next.error ? storeError(next.error) : null;
  const moved = await trx('invocations')
    .where({ id: approval.invocationId, status: 'awaiting_approval' })
    .update({
      status: next.status,
      error: error === null ? null : JSON.stringify(error),
      updated_at: change.at,
      completed_at: ENDS.has(next.status) ? change.at : null,
    });
  // Rolls the whole resolution back: an approval never resolves without its invocation moving.
  if (moved !== 1) throw new Error(`invocation ${approval.invocationId} is no longer awaiting approval`);
}
