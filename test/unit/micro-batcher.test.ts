import { MicroBatcher } from '../../infra/micro-batcher';

const tick = () => new Promise((r) => setImmediate(r));

describe('MicroBatcher (group commit)', () => {
  it('flushes a lone item on the next turn of the event loop', async () => {
    const batches: number[][] = [];
    const batcher = new MicroBatcher<number, number>(async (items) => {
      batches.push(items);
      return items.map((i) => i * 2);
    });
    expect(await batcher.submit(21)).toBe(42);
    expect(batches).toEqual([[21]]);
  });

  it('sends items submitted while a flush is in flight together in the next one', async () => {
    const batches: number[][] = [];
    let release: () => void = () => undefined;
    const batcher = new MicroBatcher<number, number>(
      async (items) => {
        batches.push(items);
        if (batches.length === 1) await new Promise<void>((r) => (release = r));
        return items;
      },
      { maxInFlight: 1 },
    );
    const first = batcher.submit(1);
    await tick();
    const rest = [2, 3, 4, 5].map((n) => batcher.submit(n));
    await tick();
    expect(batches).toEqual([[1]]);
    release();
    expect(await Promise.all([first, ...rest])).toEqual([1, 2, 3, 4, 5]);
    expect(batches).toEqual([[1], [2, 3, 4, 5]]);
  });

  it('never puts more than maxBatch items in one flush', async () => {
    const sizes: number[] = [];
    const batcher = new MicroBatcher<number, number>(
      async (items) => {
        sizes.push(items.length);
        return items;
      },
      { maxBatch: 3 },
    );
    await Promise.all(Array.from({ length: 8 }, (_, i) => batcher.submit(i)));
    expect(sizes.every((s) => s <= 3)).toBe(true);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(8);
  });

  it('retries a failed batch item by item, so only the bad item fails', async () => {
    const batcher = new MicroBatcher<number, number>(async (items) => {
      if (items.includes(13)) throw new Error('13 is bad');
      return items;
    });
    const results = await Promise.allSettled([1, 13, 2].map((n) => batcher.submit(n)));
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toEqual(new Error('13 is bad'));
  });
});
