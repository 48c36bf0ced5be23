import { statsTable } from '../src/cli/commands/stats';
import type { UsageStats } from '../src/types';

const figures = (cost: number) => ({
  calls: 1,
  succeeded: 1,
  failed: 0,
  denied: 0,
  cancelled: 0,
  input_tokens: 10,
  output_tokens: 5,
  cost_usd: cost,
});

const stats = (truncated: boolean): UsageStats => ({
  from: '2026-11-01T00:00:00.000Z',
  to: '2026-11-28T00:00:00.000Z',
  totals: figures(3),
  groups: [
    { key: 'ses_a', ...figures(2) },
    { key: 'ses_b', ...figures(1) },
  ],
  groups_truncated: truncated,
});

describe('control-plane stats', () => {
  it('says when the service left groups out, so the total is not read as their sum', () => {
    const shown = statsTable(stats(true));
    expect(shown).toContain('ses_a');
    expect(shown).toContain('only the 2 costliest groups are shown; the total counts every group');
  });

  it('says nothing more when every group is there', () => {
    expect(statsTable(stats(false))).not.toContain('costliest');
  });
});
