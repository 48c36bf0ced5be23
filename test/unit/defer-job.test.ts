import { DelayedError } from 'bullmq';
import { OrgAtCapacity } from '../../domain/org-at-capacity';
import { deferring } from '../../workers/defer-job';

/** A job that records what the worker did with it. */
function fakeJob(promote: () => Promise<void> = () => Promise.resolve()) {
  const calls: string[] = [];
  const job = {
    moveToDelayed: (at: number) => (
      calls.push(`delayed ${at > Date.now() ? 'later' : 'now'}`),
      Promise.resolve()
    ),
    promote: () => (calls.push('promoted'), promote()),
  };
  return { job, calls };
}

const refused = (owed: () => Promise<boolean>) =>
  Promise.reject(new OrgAtCapacity(60_000, owed, 'its share of the test'));

describe('a job put back to wait its turn', () => {
  it('is delayed, and runs at once when a slot was given back while it was being refused', async () => {
    const { job, calls } = fakeJob();
    await expect(
      deferring(
        job as never,
        'token',
        refused(async () => true),
      ),
    ).rejects.toBeInstanceOf(DelayedError);
    expect(calls).toEqual(['delayed later', 'promoted']);
  });

  it('waits out its delay when no slot is owed to it', async () => {
    const { job, calls } = fakeJob();
    await expect(
      deferring(
        job as never,
        'token',
        refused(async () => false),
      ),
    ).rejects.toBeInstanceOf(DelayedError);
    expect(calls).toEqual(['delayed later']);
  });

  it('waits out its delay when the question fails, and is not failed when the wake-up came first', async () => {
    const asked = fakeJob();
    await expect(
      deferring(
        asked.job as never,
        'token',
        refused(() => Promise.reject(new Error('redis down'))),
      ),
    ).rejects.toBeInstanceOf(DelayedError);
    expect(asked.calls).toEqual(['delayed later']);

    const woken = fakeJob(() => Promise.reject(new Error('job is not in the delayed state')));
    await expect(
      deferring(
        woken.job as never,
        'token',
        refused(async () => true),
      ),
    ).rejects.toBeInstanceOf(DelayedError);
    expect(woken.calls).toEqual(['delayed later', 'promoted']);
  });

  it('passes any other failure, and a result, through untouched', async () => {
    const { job, calls } = fakeJob();
    const boom = new Error('boom');
    await expect(deferring(job as never, 'token', Promise.reject(boom))).rejects.toBe(boom);
    await expect(deferring(job as never, 'token', Promise.resolve('done'))).resolves.toBe('done');
    expect(calls).toEqual([]);
  });
});
