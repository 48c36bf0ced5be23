import { Command, Option } from 'commander';
import type { UsageStats } from '../../types';
import { action } from '../call';
import { table, usd, when } from '../format';
import type { RunState } from '../state';

interface StatsOptions {
  from?: string;
  to?: string;
  groupBy?: 'day' | 'agent' | 'model' | 'session' | 'key';
}

type Figures = UsageStats['totals'];

const figures = (f: Figures) => [
  f.calls,
  f.succeeded,
  f.failed,
  f.denied,
  f.cancelled,
  f.input_tokens,
  f.output_tokens,
  usd(f.cost_usd),
];

const HEAD = [
  'calls',
  'succeeded',
  'failed',
  'denied',
  'cancelled',
  'input_tokens',
  'output_tokens',
  'cost_usd',
];

/**
 * One row per group, then the totals, which equal the groups' sum unless the service left groups
 * out (more than it answers at once: the costliest are shown, the totals count them all).
 */
export const statsTable = (stats: UsageStats): string =>
  `${when(stats.from)} .. ${when(stats.to)}\n` +
  table(
    ['key', ...HEAD],
    [...stats.groups.map((g) => [g.key, ...figures(g)]), ['total', ...figures(stats.totals)]],
  ) +
  (stats.groups_truncated
    ? `\nonly the ${stats.groups.length} costliest groups are shown; the total counts every group\n`
    : '');

export function statsCommand(state: RunState): Command {
  return new Command('stats')
    .description('usage of invocations finished in [from, to) (stats:read)')
    .option('--from <time>', 'ISO 8601, inclusive (default: 30 days before --to)')
    .option('--to <time>', 'ISO 8601, exclusive (default: now)')
    .addOption(
      new Option('--group-by <what>', 'one row per group').choices([
        'day',
        'agent',
        'model',
        'session',
        'key',
      ]),
    )
    .action(
      action<StatsOptions>(state, async (call) => {
        const { from, to, groupBy } = call.options;
        const stats = await call.client().stats.usage({ from, to, group_by: groupBy });
        return call.show(stats, () => statsTable(stats));
      }),
    );
}
