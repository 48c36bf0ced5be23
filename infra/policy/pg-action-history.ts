import type { Knex } from '@mikro-orm/knex';
import type {
  ActionHistory,
  HistoryPosition,
  RecordedInvocation,
} from '../../domain/policy/action-history.port';
import { toDate, type Num, type Time } from '../db/row-values';
import { loadMessage, type StoredRequest } from '../invocations/invocation-rows';

interface HistoryRow {
  id: string;
  created_at: Time;
  agent_id: string | null;
  session_id: string;
  model: string;
  messages: StoredRequest['messages'];
  max_tokens: Num;
  tool: StoredRequest['tool'] | null;
  tools: StoredRequest['tools'] | null;
  tool_choice: unknown;
  reserve_micros: Num;
  input_price_micros: Num;
  output_price_micros: Num;
  refused_by_agent: boolean;
}

/**
 * Only what the engine judges: the request's messages, max_tokens, tool and tools (not its
 * metadata); and whether the agent record refused it (a denial with a reason of no policy).
 */
const COLUMNS = `id, created_at, agent_id, session_id, model, reserve_micros, input_price_micros, output_price_micros,
  request->'messages' as messages, request->'max_tokens' as max_tokens, request->'tool' as tool,
  request->'tools' as tools, request->'tool_choice' as tool_choice,
  coalesce(decision->>'verdict' = 'deny' and decision->'reasons' @> '[{"policy_id": null}]', false)
    as refused_by_agent`;

const toRecorded = (r: HistoryRow): RecordedInvocation => ({
  id: r.id,
  createdAt: toDate(r.created_at),
  agentId: r.agent_id,
  sessionId: r.session_id,
  model: r.model,
  messages: r.messages.map(loadMessage),
  maxTokens: Number(r.max_tokens),
  ...(r.tool ? { tool: r.tool } : {}),
  ...(r.tools?.length ? { offeredTools: r.tools } : {}),
  ...(r.tool_choice !== null && r.tool_choice !== undefined ? { toolChoice: r.tool_choice } : {}),
  reserveMicros: Number(r.reserve_micros),
  price: {
    inputMicrosPerMtok: Number(r.input_price_micros),
    outputMicrosPerMtok: Number(r.output_price_micros),
  },
  refusedByAgent: r.refused_by_agent,
});

/** The org's recorded invocations, oldest first, for the policy impact preview. */
export class PgActionHistory implements ActionHistory {
  constructor(private readonly knex: Knex) {}

  async page(
    orgId: string,
    window: { since: Date; until: Date },
    after: HistoryPosition | null,
    limit: number,
  ): Promise<RecordedInvocation[]> {
    // Keyset pages on (created_at, id): each page starts where the last one ended.
    const query = this.knex('invocations')
      .select(this.knex.raw(COLUMNS))
      .where({ org_id: orgId })
      .andWhere('created_at', '>=', window.since)
      .andWhere('created_at', '<', window.until);
    if (after) query.andWhereRaw('(created_at, id) > (?::timestamptz, ?::text)', [after.at, after.id]);
    const rows: HistoryRow[] = await query
      .orderBy([
        { column: 'created_at', order: 'asc' },
        { column: 'id', order: 'asc' },
      ])
      .limit(limit);
    return rows.map(toRecorded);
  }
}
