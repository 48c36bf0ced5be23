import { startTestApp, type TestApp } from '../support/test-app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

const expiry = (n: number) => ({ approval_id: `apr_test_${n}`, org_id: 'org_test' });

/** Delayed an hour, so no worker (there is none here either) takes them before they are read. */
const enqueue = (n: number) =>
  app.infra.queues.enqueue('approval.expire', expiry(n), `apr_test_${n}`, 3_600_000);

async function stored(n: number) {
  const job = await app.infra.queues.queue('approvals').getJob(`apr_test_${n}`);
  return (
    job && { name: job.name, data: job.data as unknown, attempts: job.opts.attempts, delay: job.opts.delay }
  );
}

describe('enqueueing jobs (alone through add, together through addBulk)', () => {
  it('stores a lone job with its payload and its contract options', async () => {
    await enqueue(1);
    expect(await stored(1)).toEqual({
      name: 'approval.expire',
      data: expiry(1),
      attempts: app.infra.queues.optionsOf('approval.expire').attempts,
      delay: 3_600_000,
    });
  });

  it('stores every job of a burst enqueued in one turn', async () => {
    await Promise.all([2, 3, 4].map(enqueue));
    for (const n of [2, 3, 4]) expect((await stored(n))?.data).toEqual(expiry(n));
  });

  it('keeps one job per job id, alone or in a burst', async () => {
    await enqueue(5);
    await enqueue(5);
    await Promise.all([enqueue(6), enqueue(6)]);
    const ids = (await app.infra.queues.queue('approvals').getDelayed()).map((job) => job.id);
    expect(ids.filter((id) => id === 'apr_test_5')).toHaveLength(1);
    expect(ids.filter((id) => id === 'apr_test_6')).toHaveLength(1);
  });
});
