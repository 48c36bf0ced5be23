import { jobWaitLine, waitsDuring, type WaitTally } from '../../bench/job-wait';

/** Cumulative counts by bound, as cp_job_wait_seconds_bucket reads. */
const tally = (counts: [number, number][], sum: number, inApi: [string, number][] = []): WaitTally => ({
  buckets: new Map(counts),
  sum,
  inApi: new Map(inApi),
});

describe("the bench's job wait line", () => {
  const before = tally(
    [
      [0.001, 10],
      [0.01, 10],
      [0.1, 10],
      [Infinity, 10],
    ],
    0.005,
  );

  it("reads the row's waits only: their mean and the buckets that hold p50 and p99", () => {
    // During the row: 60 under 1 ms, 39 more under 10 ms, 1 more under 100 ms.
    const after = tally(
      [
        [0.001, 70],
        [0.01, 109],
        [0.1, 110],
        [Infinity, 110],
      ],
      0.005 + 0.3,
    );
    expect(jobWaitLine(waitsDuring(before, after))).toBe(
      'invoke jobs waited for a worker: mean 3.0 ms, p50 ≤ 1 ms, p99 ≤ 10 ms',
    );
  });

  it('says when a wait fell past the largest bucket, and when no job started', () => {
    const slow = tally(
      [
        [0.001, 10],
        [0.01, 10],
        [0.1, 10],
        [Infinity, 12],
      ],
      0.005 + 1,
    );
    expect(jobWaitLine(waitsDuring(before, slow))).toBe(
      'invoke jobs waited for a worker: mean 500.0 ms, p50 over the largest bucket, p99 over the largest bucket',
    );
    expect(jobWaitLine(waitsDuring(before, before))).toBe('invoke jobs waited for a worker: none started');
  });

  it("adds where the row's sync invokes went when an API took them, over every process", () => {
    const api = tally([[Infinity, 10]], 0.005, [
      ['ran', 100],
      ['queued', 5],
      ['handed_over', 0],
    ]);
    const later = tally([[Infinity, 12]], 0.005 + 0.2, [
      ['ran', 190],
      ['queued', 7],
      ['handed_over', 0],
    ]);
    expect(jobWaitLine(waitsDuring(api, later))).toBe(
      'invoke jobs waited for a worker: mean 100.0 ms, p50 over the largest bucket, p99 over the largest bucket\n' +
        `${''.padEnd(34)} sync invokes the API took: ran 90, queued 2`,
    );
  });
});
