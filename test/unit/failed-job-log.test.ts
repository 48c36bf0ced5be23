import { failedJobLog, PERIODIC_FAILURE_LOG_MS } from '../../workers/failed-job-log';

describe('the log of failed jobs', () => {
  const setUp = () => {
    const lines: Record<string, unknown>[] = [];
    const planned: Record<string, unknown>[] = [];
    let now = 1_000_000;
    const log = failedJobLog(
      {
        warn: (fields: Record<string, unknown>) => lines.push(fields),
        info: (fields: Record<string, unknown>) => planned.push(fields),
      } as never,
      () => now,
    );
    return { lines, planned, log, advance: (ms: number) => (now += ms) };
  };

  it('logs a periodic job that keeps failing once a minute, with how many failures it left out', () => {
    const { lines, log, advance } = setUp();
    for (let i = 0; i <= PERIODIC_FAILURE_LOG_MS / 200; i++) {
      log({ name: 'audit.seal', id: `repeat:${i}` }, new Error('no database'));
      advance(200);
    }
    // 60 s of failures five times a second: the first, then one a minute later.
    expect(lines.map((l) => [l.job, l.failures_not_logged])).toEqual([
      ['audit.seal', undefined],
      ['audit.seal', PERIODIC_FAILURE_LOG_MS / 200 - 1],
    ]);
    expect(lines[0]!.err).toBeInstanceOf(Error);
  });

  it('keeps each periodic job to its own minute', () => {
    const { lines, log } = setUp();
    log({ name: 'audit.seal', id: '1' }, new Error('x'));
    log({ name: 'invocations.reap', id: '2' }, new Error('x'));
    log({ name: 'audit.seal', id: '3' }, new Error('x'));
    expect(lines.map((l) => l.job)).toEqual(['audit.seal', 'invocations.reap']);
  });

  it('logs an attempt the queue runs again at info, without the error, and the last one at warn (QA)', () => {
    const { lines, planned, log } = setUp();
    const job = (attemptsMade: number) => ({
      name: 'webhook.deliver',
      id: 'msg_1',
      attemptsMade,
      opts: { attempts: 3 },
    });
    log(job(1), new Error('receiver answered 500'));
    log(job(2), new Error('receiver answered 500'));
    log(job(3), new Error('receiver answered 500'));
    expect(planned).toEqual([
      { job: 'webhook.deliver', job_id: 'msg_1', attempt: 1, error: 'Error' },
      { job: 'webhook.deliver', job_id: 'msg_1', attempt: 2, error: 'Error' },
    ]);
    expect(lines).toEqual([{ job: 'webhook.deliver', job_id: 'msg_1', err: expect.any(Error) }]);
  });

  it("numbers a handed-over invoke job's attempts from the one its API process made (QA)", () => {
    const { planned, log } = setUp();
    const job = (attemptsMade: number) => ({
      name: 'invocation.run',
      id: 'inv_1-submit',
      attemptsMade,
      opts: { attempts: 2 },
      data: { invocation_id: 'inv_1', org_id: 'org_1', trace: {}, attempts_made: 1 },
    });
    log(job(1), new Error('provider answered 503'));
    expect(planned).toEqual([{ job: 'invocation.run', job_id: 'inv_1-submit', attempt: 2, error: 'Error' }]);
  });

  it('logs every failure of a job with a payload of its own', () => {
    const { lines, log } = setUp();
    for (let i = 0; i < 5; i++) log({ name: 'webhook.deliver', id: `msg_${i}` }, new Error('503'));
    log(undefined, new Error('gone'));
    expect(lines.map((l) => l.job_id)).toEqual(['msg_0', 'msg_1', 'msg_2', 'msg_3', 'msg_4', undefined]);
  });
});
