import type { Knex } from '@mikro-orm/knex';
import type { GroupBy, UsageFigures, UsageReport, UsageStatsReader } from '../../domain/stats/usage-stats';

/** The grouping key of each `group_by`, as SQL over the invocations table. */
const KEY_SQL: Record<GroupBy, string> = {
  day: `to_char(completed_at at time zone 'UTC', 'YYYY-MM-DD')`,
  agent: `coalesce(agent_id, 'none')`,
  model: 'model',
  session: 'session_id',
  key: 'requested_by',
};

/** `calls` counts provider calls, as a session's usage does: each attempt of a retried invocation. */
const FIGURES = `
  coalesce(sum(charged_calls), 0) as calls,
  count(*) filter (where status = 'succeeded') as succeeded,
  count(*) filter (where status = 'failed') as failed,
  count(*) filter (where status = 'denied') as denied,
  count(*) filter (where status = 'cancelled') as cancelled,
  coalesce(sum(input_tokens), 0) as input_tokens,
  coalesce(sum(output_tokens), 0) as output_tokens,
  coalesce(sum(cost_micros), 0) as cost_micros`;

/** The order groups are kept in when there are too many: by cost, then calls, then key. */
const COSTLIEST = 'cost_micros desc, calls desc, key';

type FigureRow = Record<
  | 'calls'
  | 'succeeded'
  | 'failed'
  | 'denied'
  | 'cancelled'
  | 'input_tokens'
  | 'output_tokens'
  | 'cost_micros',
  string | number
>;

const toFigures = (r: FigureRow | undefined): UsageFigures => ({
  calls: Number(r?.calls ?? 0),
  succeeded: Number(r?.succeeded ?? 0),
  failed: Number(r?.failed ?? 0),
  denied: Number(r?.denied ?? 0),
  cancelled: Number(r?.cancelled ?? 0),
  inputTokens: Number(r?.input_tokens ?? 0),
  outputTokens: Number(r?.output_tokens ?? 0),
  costMicros: Number(r?.cost_micros ?? 0),
});

/**
 * One statement, one snapshot: the totals row (grouping set ()) and the groups always agree. The
 * groups are ranked by a top-N sort that keeps one more than it shows, to tell that some were left
 * out, so at most maxGroups group rows leave the database however many the window holds.
 * Parameters: org id, from, to, maxGroups + 1, maxGroups, maxGroups.
 */
const usageSql = (key: string) => `
  with g as (
    select grouping(k) as is_total, k as key, ${FIGURES}
    from (select *, ${key} as k from invocations
          where org_id = ? and completed_at >= ? and completed_at < ?) x
    group by grouping sets ((k), ())
  ),
  top as (select * from g where is_total = 0 order by ${COSTLIEST} limit ?)
  select *, (select count(*) from top) > ? as groups_truncated from g where is_total = 1
  union all
  (select *, false from top order by ${COSTLIEST} limit ?)
  order by is_total desc, key`;

/**
 * Usage from finished invocations, by when they finished: the rows whose charges were added to
 * their sessions in the same transaction, so the totals equal the sessions' settled usage.
 */
export class PgUsageStats implements UsageStatsReader {
  constructor(private readonly knex: Knex) {}

  async usage(
    orgId: string,
    from: Date,
    to: Date,
    groupBy: GroupBy | null,
    maxGroups: number,
  ): Promise<Omit<UsageReport, 'from' | 'to'>> {
    const key = groupBy ? KEY_SQL[groupBy] : `''`;
    const params = [orgId, from, to, maxGroups + 1, maxGroups, maxGroups];
    const { rows } = (await this.knex.raw(usageSql(key), params)) as {
      rows: (FigureRow & { is_total: number; key: string; groups_truncated: boolean })[];
    };
    const totals = rows.find((r) => Number(r.is_total) === 1);
    const groups = groupBy ? rows.filter((r) => Number(r.is_total) === 0) : [];
    return {
      totals: toFigures(totals),
      groups: groups.map((r) => ({ key: r.key, ...toFigures(r) })),
      groupsTruncated: groupBy !== null && totals?.groups_truncated === true,
    };
  }
}
