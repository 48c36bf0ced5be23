import type { Knex } from '@mikro-orm/knex';
import type { AuditEvent } from '../../domain/audit/audit-event';
import type { CapSnapshot } from '../../domain/budget/cap-ledger';
import type { Invocation } from '../../domain/invocations/invocation';
import type {
  AgentGate,
  DecisionWrite,
  FinishWrite,
  GuardianView,
  HistoryItem,
  InvocationFilter,
  InvocationStore,
  InvokeContext,
  InvokeContextQuery,
  RunView,
  StuckInvocation,
  WriteOutcome,
} from '../../domain/invocations/invocation-store';
import type { AgentStatus, ModelPrice, Page } from '../../domain/model';
import type { Provider } from '../../domain/providers';
import { auditJson } from '../db/audit-rows';
import { MicroBatcher } from '../micro-batcher';
import type { PreparedPool, Statement } from '../db/prepared-pool';
import {
  decisionJson,
  storeDecision,
  storeRequest,
  toDecision,
  toInvocation,
  toSession,
  type DecisionRow,
  type InvocationRow,
  type SessionRow,
} from './invocation-rows';
import {
  BY_IDS,
  CAP_SNAPSHOT,
  DECIDE,
  FINISH,
  FOR_GUARDIAN,
  FOR_RUN,
  HISTORY,
  INSERT_QUEUED,
  INVOKE_CONTEXT,
} from './invocation-sql';

type Rows<T> = { rows: T[] };

interface ContextRow {
  session: SessionRow | null;
  agent: { id: string; status: string; allowed_models: string[]; credential_refs: string[] } | null;
  credential: { ref: string; provider: string; deleted_at: string | null } | null;
  price: {
    org_id: string;
    model: string;
    input_micros_per_mtok: number;
    output_micros_per_mtok: number;
    updated_at: string;
    updated_by: string;
  } | null;
}

const priceOf = (p: ContextRow['price']): ModelPrice | null =>
  p
    ? {
        orgId: p.org_id,
        model: p.model,
        inputMicrosPerMtok: Number(p.input_micros_per_mtok),
        outputMicrosPerMtok: Number(p.output_micros_per_mtok),
        updatedAt: new Date(p.updated_at),
        updatedBy: p.updated_by,
      }
    : null;

/** PostgreSQL refused a settled charge past a session cap (constraints sessions_*_cap). */
const isCapViolation = (err: unknown): boolean => {
  const e = err as { code?: string; constraint?: string; previous?: unknown; cause?: unknown };
  if (e?.code === '23514' && e.constraint?.startsWith('sessions_')) return true;
  return Boolean(e?.previous && isCapViolation(e.previous)) || Boolean(e?.cause && isCapViolation(e.cause));
};

/** Two batches touching the same sessions in another order: PostgreSQL aborts one; run it again. */
const isRetryableConflict = (err: unknown): boolean => {
  const code = (err as { code?: string })?.code;
  return code === '40P01' || code === '40001';
};

/**
 * Splits writes into rounds with one write per invocation: two writes to the same row in one
 * statement would both look applied. Rounds run in order, so the second sees the first's result.
 */
async function inRounds<W extends { invocationId: string }>(
  writes: W[],
  apply: (round: W[]) => Promise<Set<string>>,
): Promise<WriteOutcome[]> {
  const outcomes: WriteOutcome[] = new Array<WriteOutcome>(writes.length).fill('skipped');
  let left = writes.map((write, index) => ({ write, index }));
  while (left.length > 0) {
    const seen = new Set<string>();
    const round = left.filter(({ write }) => !seen.has(write.invocationId) && seen.add(write.invocationId));
    left = left.filter((item) => !round.includes(item));
    const applied = await apply(round.map((r) => r.write));
    for (const { write, index } of round)
      outcomes[index] = applied.has(write.invocationId) ? 'applied' : 'skipped';
  }
  return outcomes;
}

async function withConflictRetry<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (err) {
      if (!isRetryableConflict(err) || attempt >= 5) throw err;
    }
  }
}

interface GuardianRow extends InvocationRow {
  session_status: string;
  session_expires_at: Date | string;
  gate_id: string | null;
  gate_status: string | null;
  gate_allowed_models: string[] | null;
  gate_credential_refs: string[] | null;
}

interface RunRow extends InvocationRow {
  cred_ref: string | null;
  cred_provider: string | null;
  cred_base_url: string | null;
  cred_sealed_secret: string | null;
  cred_key_id: string | null;
}

const gateOf = (r: {
  id: string;
  status: string;
  allowed_models: string[];
  credential_refs: string[];
}): AgentGate => ({
  id: r.id,
  status: r.status as AgentStatus,
  allowedModels: r.allowed_models,
  credentialRefs: r.credential_refs,
});

const toGuardianView = (r: GuardianRow): GuardianView => ({
  invocation: toInvocation(r),
  agent: r.gate_id
    ? gateOf({
        id: r.gate_id,
        status: r.gate_status ?? 'active',
        allowed_models: r.gate_allowed_models ?? [],
        credential_refs: r.gate_credential_refs ?? [],
      })
    : null,
  session: {
    status: r.session_status as GuardianView['session']['status'],
    expiresAt: new Date(r.session_expires_at),
  },
});

const toRunView = (r: RunRow): RunView => ({
  invocation: toInvocation(r),
  credential: r.cred_ref
    ? {
        ref: r.cred_ref,
        provider: r.cred_provider as Provider,
        baseUrl: r.cred_base_url,
        sealedSecret: r.cred_sealed_secret,
        keyId: r.cred_key_id ?? '',
      }
    : null,
});

const insertJson = (i: Invocation) => ({
  id: i.id,
  org_id: i.orgId,
  session_id: i.sessionId,
  agent_id: i.agentId,
  requested_by_type: i.requestedBy.type,
  requested_by: i.requestedBy.id,
  model: i.model,
  provider: i.provider,
  credential_ref: i.credentialRef,
  request: storeRequest(i.request),
  input_price_micros: i.price.inputMicrosPerMtok,
  output_price_micros: i.price.outputMicrosPerMtok,
  reserve_micros: i.reservation.costMicros,
  reserve_tokens: i.reservation.tokens,
  request_id: i.requestId,
  created_at: i.createdAt,
});

const decideJson = (w: DecisionWrite) => ({
  invocation_id: w.invocationId,
  expected: 'queued',
  status: w.status,
  request: w.request ? storeRequest(w.request) : null,
  reserve_micros: w.reservation?.costMicros ?? null,
  reserve_tokens: w.reservation?.tokens ?? null,
  decision: storeDecision(w.decision),
  error: w.error ? { error_code: w.error.errorCode, message: w.error.message } : null,
  at: w.at,
});

const finishJson = (w: FinishWrite) => ({
  invocation_id: w.invocationId,
  from_statuses: w.from,
  status: w.status,
  output: w.output,
  input_tokens: w.usage?.inputTokens ?? null,
  output_tokens: w.usage?.outputTokens ?? null,
  cost_micros: w.costMicros,
  charged_calls: w.chargedCalls,
  error: w.error ? { error_code: w.error.errorCode, message: w.error.message } : null,
  at: w.at,
});

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

/**
 * The invoke path in PostgreSQL: batched, prepared statements on the hot path (see InvocationStore
 * and PreparedPool); knex for the reads and sweeps off it.
 */
export class PgInvocationStore implements InvocationStore {
  private readonly inserts: MicroBatcher<{ invocation: Invocation; event: AuditEvent }, void>;
  private readonly decisions: MicroBatcher<DecisionWrite, WriteOutcome>;
  private readonly finishes: MicroBatcher<FinishWrite, WriteOutcome>;
  private readonly guardianViews: MicroBatcher<string, GuardianView | null>;
  private readonly runViews: MicroBatcher<string, RunView | null>;
  private readonly byId: MicroBatcher<string, Invocation | null>;

  constructor(
    private readonly pool: PreparedPool,
    private readonly knex: Knex,
  ) {
    this.inserts = new MicroBatcher(async (items) => {
      await pool.query(INSERT_QUEUED, [
        JSON.stringify(items.map((i) => insertJson(i.invocation))),
        auditJson(items.map((i) => i.event)),
      ]);
      return items.map(() => undefined);
    });
    this.decisions = new MicroBatcher((writes) => this.applyDecisions(writes));
    this.finishes = new MicroBatcher((writes) => this.applyFinishes(writes));
    this.guardianViews = rowLoader(pool, FOR_GUARDIAN, toGuardianView);
    this.runViews = rowLoader(pool, FOR_RUN, toRunView);
    this.byId = rowLoader(pool, BY_IDS, toInvocation);
  }

  async invokeContext(orgId: string, q: InvokeContextQuery): Promise<InvokeContext> {
    const [row] = await this.pool.query<ContextRow>(INVOKE_CONTEXT, [
      orgId,
      q.sessionId,
      q.agentId,
      q.credentialRef,
      q.model,
    ]);
    return {
      session: row?.session ? toSession(row.session) : null,
      agent: row?.agent ? gateOf(row.agent) : null,
      credential: row?.credential
        ? {
            ref: row.credential.ref,
            provider: row.credential.provider as Provider,
            deleted: row.credential.deleted_at !== null,
          }
        : null,
      orgPrice: priceOf(row?.price ?? null),
    };
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
      SessionRow & { in_flight: { id: string; cost: number; tokens: number }[] }
    >(CAP_SNAPSHOT, [sessionId]);
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
      inFlight: row.in_flight.map((i) => ({
        invocationId: i.id,
        amounts: { costMicros: Number(i.cost), calls: 1, tokens: Number(i.tokens) },
      })),
    };
  }

  async stuck(before: Date, limit: number): Promise<StuckInvocation[]> {
    // Through the index of unfinished invocations, oldest first.
    const rows: { id: string; org_id: string; session_id: string; status: 'queued' | 'running' }[] =
      await this.knex('invocations')
        .select('id', 'org_id', 'session_id', 'status')
        .whereNull('completed_at')
        .andWhere('created_at', '<', before)
        .whereIn('status', ['queued', 'running'])
        .andWhere('updated_at', '<', before)
        .orderBy('created_at')
        .limit(limit);
    return rows.map((r) => ({ id: r.id, orgId: r.org_id, sessionId: r.session_id, status: r.status }));
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
        auditJson(round.map((w) => w.event)),
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
