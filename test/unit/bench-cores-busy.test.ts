import { coresBusy } from '../../bench/harness';

describe("the bench's cores busy", () => {
  it('is the CPU per call of every process counted, times the calls per second', () => {
    // 2.5 ms per call over the processes, 600 calls in 2 s: 300/s keep 0.75 of a core busy.
    const row = { cpuPerCall: { api: 1, worker: 1, postgres: 0.5, redis: 0 }, done: 600, seconds: 2 };
    expect(coresBusy(row)).toBeCloseTo(0.75, 10);
  });

  it('is nothing for a row that counted no CPU', () => {
    expect(coresBusy({ cpuPerCall: {}, done: 100, seconds: 1 })).toBe(0);
  });
});
