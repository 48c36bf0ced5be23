import { usageStats } from '../../domain/stats/usage-stats';
import { callOf } from '../http/call-context';
import { defineRoute, needs } from '../http/route';
import { presentUsage } from '../presenters';
import { UsageQuery, UsageView } from '../schemas/stats.schemas';

export const statsRoutes = [
  defineRoute({
    method: 'GET',
    path: '/v1/stats/usage',
    summary:
      'Usage of invocations finished in [from, to), in total and grouped by day, agent, model, session or key',
    tag: 'stats',
    access: needs('stats:read'),
    query: UsageQuery,
    responses: { 200: { description: 'the usage', schema: UsageView } },
    handle: async (input) => {
      const { query } = input;
      const report = await usageStats(
        { stats: input.infra.usageStats, clock: input.infra.clock },
        callOf(input),
        {
          from: query.from ? new Date(query.from) : undefined,
          to: query.to ? new Date(query.to) : undefined,
          groupBy: query.group_by,
        },
      );
      return { status: 200, body: presentUsage(report) };
    },
  }),
];
