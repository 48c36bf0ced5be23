import { closeOrGiveUp } from '../../workers/close-or-give-up';

const after = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const never = () => new Promise<void>(() => undefined);
const up = () => Promise.resolve();
const gone = () => Promise.reject(new Error('connect ECONNREFUSED'));

describe('closing the workers at shutdown', () => {
  it('waits for the jobs in flight while Redis answers', async () => {
    let finished = false;
    const closing = after(120).then(() => (finished = true));
    await closeOrGiveUp(closing, up, 20);
    expect(finished).toBe(true);
  });

  it('leaves no timer behind once the workers have closed', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    await after(50); // outlasts any 20-ms tick an earlier test left, which would mask one left here
    const before = timers();
    await closeOrGiveUp(after(30), up, 250);
    expect(timers()).toBe(before);
  });

  it('returns at once when nothing is in flight, even with Redis gone', async () => {
    await expect(closeOrGiveUp(Promise.resolve(), gone, 20)).resolves.toBeUndefined();
  });

  it('gives up, saying what happens to the jobs, once Redis no longer answers', async () => {
    const started = Date.now();
    await expect(closeOrGiveUp(never(), gone, 20)).rejects.toThrow(/Redis is gone.*stalled-job check/);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('gives up only when Redis goes, not while it answers', async () => {
    let answering = true;
    setTimeout(() => (answering = false), 150);
    const started = Date.now();
    await expect(closeOrGiveUp(never(), () => (answering ? up() : gone()), 20)).rejects.toThrow(
      /Redis is gone/,
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
  });
});
