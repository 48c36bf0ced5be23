import { queueWaitMs, type DatedJob } from '../../workers/queue-wait';

const NOW = 1_800_000_000_000;

/** A job as a worker receives it on its first start (the shapes BullMQ 6.7 hands a processor). */
const job = (fields: Partial<DatedJob> = {}): DatedJob => ({
  timestamp: NOW - 40,
  opts: {},
  attemptsMade: 0,
  attemptsStarted: 1,
  ...fields,
});

describe('queueWaitMs', () => {
  it('dates a job added for now from when it was added', () => {
    expect(queueWaitMs(job(), NOW)).toBe(40);
  });

  it('dates a delayed or scheduled job from its slot, not from when it was added', () => {
    // approval.expire is added with a delay of its expiry; a job scheduler adds the next run with a
    // delay to its slot. Both reach the worker with job.delay 0 and the delay kept in opts.
    expect(queueWaitMs(job({ timestamp: NOW - 5_000, opts: { delay: 4_990 } }), NOW)).toBe(10);
    expect(queueWaitMs(job({ timestamp: NOW - 203, opts: { delay: 198 } }), NOW)).toBe(5);
  });

  it('reads null for a retry or a restart after a stall, whose due time the job does not keep', () => {
    expect(queueWaitMs(job({ attemptsMade: 1, attemptsStarted: 2 }), NOW)).toBeNull();
    expect(queueWaitMs(job({ attemptsMade: 0, attemptsStarted: 2 }), NOW)).toBeNull();
  });

  it('never reads a negative wait when the adding clock runs ahead', () => {
    expect(queueWaitMs(job({ timestamp: NOW + 25 }), NOW)).toBe(0);
  });
});
