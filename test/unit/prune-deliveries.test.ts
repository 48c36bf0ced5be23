import { PRUNE_BATCH, pruneDeliveries } from '../../domain/webhooks/prune-deliveries';

const now = new Date('2026-11-24T12:00:00Z');

/** A store that deletes `sizes` rows on successive calls, and records what it was asked. */
function store(sizes: number[]) {
  const asked: { before: Date; limit: number }[] = [];
  const deliveries = {
    deleteEndedBefore: async (before: Date, limit: number) => {
      asked.push({ before, limit });
      return sizes.shift() ?? 0;
    },
  };
  return { deliveries, asked };
}

describe('pruning webhook deliveries', () => {
  it('deletes what ended before the retention, a batch at a time, until a batch comes back short', async () => {
    const { deliveries, asked } = store([PRUNE_BATCH, PRUNE_BATCH, 3]);
    const deleted = await pruneDeliveries({ deliveries, clock: { now: () => now }, retentionDays: 30 });
    expect(deleted).toBe(2 * PRUNE_BATCH + 3);
    expect(asked).toHaveLength(3);
    for (const call of asked) {
      expect(call.before).toEqual(new Date('2026-10-25T12:00:00Z'));
      expect(call.limit).toBe(PRUNE_BATCH);
    }
  });

  it('asks once when there is nothing to delete', async () => {
    const { deliveries, asked } = store([]);
    expect(await pruneDeliveries({ deliveries, clock: { now: () => now }, retentionDays: 1 })).toBe(0);
    expect(asked).toEqual([{ before: new Date('2026-11-23T12:00:00Z'), limit: PRUNE_BATCH }]);
  });
});
