import type { Clock } from '../clock';
import { addDays } from '../clock';
import { invalidField } from '../errors';
import type { CallContext } from '../principal';

export const GROUP_BY = ['day', 'agent', 'model', 'session', 'key'] as const;
export type GroupBy = (typeof GROUP_BY)[number];

/** Settled usage of finished invocations, the same figures sessions are charged. */
export interface UsageFigures {
  /** Invocations charged a call (they reached the provider), as in the sessions' usage. */
  calls: number;
  succeeded: number;
  failed: number;
  denied: number;
  cancelled: number;
  inputTokens: number;
  outputTokens: number;
  costMicros: number;
}

export interface UsageReport {
  from: Date;
  to: Date;
  totals: UsageFigures;
  groups: (UsageFigures & { key: string })[];
  /** More groups than MAX_USAGE_GROUPS in the window: only the costliest are in `groups`. */
  groupsTruncated: boolean;
}

export interface UsageStatsReader {
  /**
   * Figures of invocations finished in [from, to): the totals over all of them, and at most
   * `maxGroups` groups, the costliest (ties: most calls, then key), sorted by key.
   */
  usage(
    orgId: string,
    from: Date,
    to: Date,
    groupBy: GroupBy | null,
    maxGroups: number,
  ): Promise<Omit<UsageReport, 'from' | 'to'>>;
}

export const DEFAULT_WINDOW_DAYS = 30;
export const MAX_WINDOW_DAYS = 366;
/** Groups in one answer: an org's sessions or keys in a window are not bounded, its answer is. */
export const MAX_USAGE_GROUPS = 1000;

/**
 * `GET /v1/stats/usage`: defaults to the last 30 days; `to` is exclusive. Beyond MAX_USAGE_GROUPS
 * groups, the costliest are kept: they are the ones a reader of usage looks for.
 */
export async function usageStats(
  deps: { stats: UsageStatsReader; clock: Clock },
  ctx: CallContext,
  query: { from?: Date | undefined; to?: Date | undefined; groupBy?: GroupBy | undefined },
): Promise<UsageReport> {
  const to = query.to ?? deps.clock.now();
  const from = query.from ?? addDays(to, -DEFAULT_WINDOW_DAYS);
  if (from.getTime() >= to.getTime()) throw invalidField('from', 'from: must be before to');
  if (to.getTime() - from.getTime() > MAX_WINDOW_DAYS * 86_400_000)
    throw invalidField('from', `from: the window may span at most ${MAX_WINDOW_DAYS} days`);
  const figures = await deps.stats.usage(
    ctx.principal.orgId,
    from,
    to,
    query.groupBy ?? null,
    MAX_USAGE_GROUPS,
  );
  return { from, to, ...figures };
}
