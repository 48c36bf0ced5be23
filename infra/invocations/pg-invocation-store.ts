import type { Knex } from '@mikro-orm/knex';
import type { AuditEvent } from '../../domain/audit/audit-event';
import type { CapSnapshot } from '../../domain/budget/cap-ledger';
import type { Invocation } from '../../domain/invocations/invocation';
import type {
  DecidedInsert,
  DecisionWrite,
  FinishWrite,
  GuardianView,
  HistoryItem,
  InvocationFilter,
  InvocationStore,
  InvokeContext,
  InvokeContextQuery,
  RunView,
  WriteOutcome,
} from '../../domain/invocations/invocation-store';
import { chargeIdOf } from '../../domain/budget/charge-id';
import { REAPABLE, statusesOf } from '../../domain/invocations/lifecycle';
import type { Page } from '../../domain/model';
import { auditJson } from '../db/audit-rows';
import type { PreparedPool, Statement } from '../db/prepared-pool';
import { MicroBatcher } from '../micro-batcher';
import {
  decisionJson,
  toDecision,
  toInvocation,
  type DecisionRow,
  type InvocationRow,
} from './invocation-rows';
import type { SessionRow } from '../sessions/session-rows';
import { toGuardianView, toInvokeContext, toRunView, type ContextRow } from './stage-rows';
import { decideJson, finishJson, insertDecidedJson, insertJson } from './write-payloads';
import { approvalJson } from '../approvals/approval-rows';
import { inRounds, isCapViolation, withConflictRetry } from './write-rounds';
import {
  BY_IDS,
  CAP_SNAPSHOT,
  DECIDE,
  FINISH,
  FOR_GUARDIAN,
  FOR_RUN,
  HISTORY,
  INSERT_DECIDED,
  INSERT_QUEUED,
  INVOKE_CONTEXTS,
} from './invocation-sql';

type Rows<T> = { rows: T[] };

/** Loads rows by id in batches: concurrent jobs asking for one row each share a query. */
function rowLoader<R extends { id: string }, T>(
  pool: PreparedPool,
  statement: Statement,
  map: (row: R) => T,
) {
  return new MicroBatcher<string, T | null>(async (ids) => {
    const rows = await pool.query<R>(statement, [ids]);
    const byId = new Map(rows.map((r) => [r.id, map(r)]));
    return ids.map((id) => byId.get(id) ?? null);
  });
}

const contextQueriesJson = (queries: { orgId: string; query: InvokeContextQuery }[]): string =>
  JSON.stringify(
    queries.map(({ orgId, query }, i) => ({
      i,
      org_id: orgId,
      session_id: query.sessionId,
      agent_id: query.agentId,
      credential_ref: query.credentialRef,
      model: query.model,
    })),
  );

/**
 * The invoke path in PostgreSQL: batched, prepared statements on the hot path (see InvocationStore
 * and PreparedPool); knex for the reads and sweeps off it.
 */
export class PgInvocationStore implements InvocationStore {
  private readonly contexts: MicroBatcher<{ orgId: string; query: InvokeContextQuery }, InvokeContext>;
  private readonly inserts: MicroBatcher<{ invocation: Invocation; event: AuditEvent }, void>;
  private readonly decidedInserts: MicroBatcher<DecidedInsert, WriteOutcome>;
  private readonly decisions: MicroBatcher<DecisionWrite, WriteOutcome>;
  private readonly finishes: MicroBatcher<FinishWrite, WriteOutcome>;
  private readonly guardianViews: MicroBatcher<string, GuardianView | null>;
  private readonly runViews: MicroBatcher<string, RunView | null>;
  private readonly byId: MicroBatcher<string, Invocation | null>;

  constructor(
    private readonly pool: PreparedPool,
    private readonly knex: Knex,
  ) {
    this.contexts = new MicroBatcher(async (queries) => {
      const rows = await pool.query<ContextRow & { i: number }>(INVOKE_CONTEXTS, [
        contextQueriesJson(queries),
      ]);
      const byIndex = new Map(rows.map((row) => [row.i, row]));
      return queries.map((_, i) => toInvokeContext(byIndex.get(i)));
    });
    this.inserts = new MicroBatcher(async (items) => {
      await pool.query(INSERT_QUEUED, [
        JSON.stringify(items.map((i) => insertJson(i.invocation))),
        auditJson(items.map((i) => i.event)),
      ]);
      return items.map(() => undefined);
    });
    this.decidedInserts = new MicroBatcher(async (items) => {
      const [row] = await pool.query<{ applied: string[] }>(INSERT_DECIDED, [
        JSON.stringify(items.map(insertDecidedJson)),
        JSON.stringify(items.map((i) => decisionJson(i.write.decision))),
        auditJson(items.flatMap((i) => [i.requested, ...i.write.events])),
        JSON.stringify(items.flatMap((i) => (i.write.approval ? [approvalJson(i.write.approval)] : []))),
      ]);
      const applied = new Set(row?.applied ?? []);
      return items.map((i): WriteOutcome => (applied.has(i.invocation.id) ? 'applied' : 'skipped'));
    });
    this.decisions = new MicroBatcher((writes) => this.applyDecisions(writes));
    this.finishes = new MicroBatcher((writes) => this.applyFinishes(writes));
    this.guardianViews = rowLoader(pool, FOR_GUARDIAN, toGuardianView);
    this.runViews = rowLoader(pool, FOR_RUN, toRunView);
    this.byId = rowLoader(pool, BY_IDS, toInvocation);
  }

  /** Admission reads of concurrent requests share one statement. */
  invokeContext(orgId: string, query: InvokeContextQuery): Promise<InvokeContext> {
    return this.contexts.submit({ orgId, query });
  }

  insert(invocation: Invocation, event: AuditEvent): Promise<void> {
    return this.inserts.submit({ invocation, event });
  }

  async get(orgId: string, id: string): Promise<Invocation | null> {
    const found = await this.byId.submit(id);
    return found && found.orgId === orgId ? found : null;
  }

  async getMany(ids: string[]): Promise<Invocation[]> {
    if (ids.length === 0) return [];
    return (await this.pool.query<InvocationRow>(BY_IDS, [ids])).map(toInvocation);
  }

  async list(
    orgId: string,
    filter: InvocationFilter,
    page: { limit: number; after: string | null },
  ): Promise<Page<Invocation>> {
    const query = this.knex<InvocationRow>('invocations').where({ org_id: orgId });
    if (filter.sessionId) query.andWhere({ session_id: filter.sessionId });
    if (filter.status) query.andWhere({ status: filter.status });
    if (page.after) query.andWhere('id', '<', page.after);
    const rows: InvocationRow[] = await query.orderBy('id', 'desc').limit(page.limit + 1);
    const items = rows.slice(0, page.limit).map(toInvocation);
    return { items, nextAfter: rows.length > page.limit ? (items.at(-1)?.id ?? null) : null };
  }

  insertDecided(insert: DecidedInsert): Promise<WriteOutcome> {
    return this.decidedInserts.submit(insert);
  }

  forGuardian(id: string): Promise<GuardianView | null> {
    return this.guardianViews.submit(id);
  }

  decide(write: DecisionWrite): Promise<WriteOutcome> {
    return this.decisions.submit(write);
  }

  forRun(id: string): Promise<RunView | null> {
    return this.runViews.submit(id);
  }

  async finish(write: FinishWrite): Promise<WriteOutcome> {
    try {
      return await this.finishes.submit(write);
    } catch (err) {
      // A failed batch is retried item by item, so this error is this write's own.
      if (isCapViolation(err)) return 'cap_violation';
      throw err;
    }
  }

  async capSnapshot(sessionId: string): Promise<CapSnapshot | null> {
    const [row] = await this.pool.query<
      SessionRow & { in_flight: { id: string; attempts: number; cost: number; tokens: number }[] }
    >(CAP_SNAPSHOT, [sessionId, statusesOf('invocation.run')]);
    if (!row) return null;
    return {
      sessionId,
      limits: {
        costMicros: Number(row.max_cost_micros),
        calls: row.max_calls === null ? null : Number(row.max_calls),
        tokens: row.max_tokens === null ? null : Number(row.max_tokens),
      },
      spent: {
        costMicros: Number(row.cost_micros),
        calls: Number(row.calls),
        tokens: Number(row.input_tokens) + Number(row.output_tokens),
      },
      expiresAt: new Date(row.expires_at),
      // Each holds (or is about to take) the reservation of its next provider attempt.
      inFlight: row.in_flight.map((i) => ({
        invocationId: chargeIdOf(i.id, Number(i.attempts) + 1),
        amounts: { costMicros: Number(i.cost), calls: 1, tokens: Number(i.tokens) },
      })),
    };
  }

  async stuck(before: Date, limit: number): Promise<Invocation[]> {
    // Through the index of unfinished invocations, oldest first.
    const rows: InvocationRow[] = await this.knex('invocations')
      .whereNull('completed_at')
      .andWhere('created_at', '<', before)
      .whereIn('status', [...REAPABLE])
      .andWhere('updated_at', '<', before)
      .orderBy('created_at')
      .limit(limit);
    return rows.map(toInvocation);
  }

  async history(
    orgId: string,
    sessionId: string,
    page: { limit: number; after: { at: Date; id: string } | null },
  ): Promise<{ items: HistoryItem[]; next: { at: Date; id: string } | null }> {
    const after = page.after;
    const { rows } = (await this.knex.raw(HISTORY, [
      orgId,
      sessionId,
      orgId,
      sessionId,
      after?.at ?? null,
      after?.at ?? null,
      after?.id ?? '',
      page.limit + 1,
    ])) as Rows<{ kind: 'invocation' | 'decision'; at: string; id: string; row: unknown }>;
    const items: HistoryItem[] = rows
      .slice(0, page.limit)
      .map((r) =>
        r.kind === 'invocation'
          ? { kind: r.kind, at: new Date(r.at), invocation: toInvocation(r.row as InvocationRow) }
          : { kind: r.kind, at: new Date(r.at), decision: toDecision(r.row as DecisionRow) },
      );
    const last = rows.length > page.limit ? rows[page.limit - 1] : undefined;
    return { items, next: last ? { at: new Date(last.at), id: last.id } : null };
  }

  private applyDecisions(writes: DecisionWrite[]): Promise<WriteOutcome[]> {
    return inRounds(writes, async (round) => {
      const [row] = await this.pool.query<{ applied: string[] }>(DECIDE, [
        JSON.stringify(round.map(decideJson)),
        JSON.stringify(round.map((w) => decisionJson(w.decision))),
        auditJson(round.flatMap((w) => w.events)),
        JSON.stringify(round.flatMap((w) => (w.approval ? [approvalJson(w.approval)] : []))),
      ]);
      return new Set(row?.applied ?? []);
    });
  }

  private applyFinishes(writes: FinishWrite[]): Promise<WriteOutcome[]> {
    return inRounds(writes, async (round) => {
      const [row] = await withConflictRetry(() =>
        this.pool.query<{ applied: string[] }>(FINISH, [
          JSON.stringify(round.map(finishJson)),
          auditJson(round.map((w) => w.event)),
        ]),
      );
      return new Set(row?.applied ?? []);
    });
  }
}
