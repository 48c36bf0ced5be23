import Redis from 'ioredis';
import { submitJobId } from '../../domain/jobs';
import { eventually } from '../support/eventually';
import { TEST_REDIS_URL } from '../support/test-db';
import { startTestApp, type TestApp } from '../support/test-app';
import {
  invoke,
  invokeBody,
  openSession,
  setUpInvoking,
  type InvocationBody,
  type InvokeSetup,
} from '../support/invoke-fixtures';

/** No workers: invocations stay queued until the test finishes them. */
let app: TestApp;
let setup: InvokeSetup;
let sessionId: string;

beforeAll(async () => {
  app = await startTestApp();
  setup = await setUpInvoking(app.http);
  sessionId = (await openSession(app.http, setup.org.adminKey, { agent_id: setup.agentId, max_cost_usd: 10 }))
    .id;
});
afterAll(() => app.close());

const queue = async (n: number) => {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await invoke(app.http, setup.org.adminKey, invokeBody(sessionId), 0);
    expect(res.status).toBe(202);
    ids.push(res.body.id);
  }
  return ids;
};

describe('jobs', () => {
  it('carry only ids and the trace context: no message text, no secret', async () => {
    const [id] = await queue(1);
    const job = await app.infra.queues.queue('invoke').getJob(submitJobId(id as string));
    expect(job?.name).toBe('invocation.run');
    expect(Object.keys(job?.data ?? {}).sort()).toEqual(['invocation_id', 'org_id', 'trace']);
    expect(job?.data.invocation_id).toBe(id);
    expect(job?.data.trace.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
    expect(JSON.stringify(job?.data)).not.toContain('hello');
  });

  it("carry a caller's long W3C tracestate without refusing the invoke", async () => {
    const tracestate = Array.from({ length: 32 }, (_, i) => `v${i}=${'a'.repeat(250)}`).join(',');
    const res = await app.http.call<InvocationBody>('POST', '/v1/llm/invoke', {
      token: setup.org.adminKey,
      body: invokeBody(sessionId),
      headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', tracestate },
    });
    expect(res.status).toBe(202);
    const job = await app.infra.queues.queue('invoke').getJob(submitJobId(res.body.id));
    expect(job?.data.trace.traceparent).toMatch(/^00-0af7651916cd43dd8448eb211c80319c-/);
    // The propagator keeps what fits the W3C limit of 512 characters.
    expect(tracestate.startsWith(job?.data.trace.tracestate)).toBe(true);
    expect(job?.data.trace.tracestate.length).toBeLessThanOrEqual(512);
  });

  it("are one per invocation and stage: the job id is the invocation id, the submit's job has its own", async () => {
    const [id] = await queue(1);
    const job = { invocation_id: id as string, org_id: setup.org.orgId, trace: {} };
    // Twice, as an approval's resume and a retried enqueue would: one job.
    await app.infra.queues.stages.enqueue('invocation.run', job);
    await app.infra.queues.stages.enqueue('invocation.run', job);
    await app.infra.queues.stages.submit(job);
    const counts = await app.infra.queues.queue('invoke').getJobCounts('waiting');
    const jobs = await app.infra.queues.queue('invoke').getJobs(['waiting']);
    expect(jobs.filter((j) => j.id === id)).toHaveLength(1);
    // The submit's job (its id its own) did not take the run job's place, nor it the submit's.
    expect(jobs.filter((j) => j.id === submitJobId(id as string))).toHaveLength(1);
    expect(counts.waiting).toBe(jobs.length);
  });
});

describe('1,000 waiting clients', () => {
  it('hold one Redis subscription and no poll loop, and are each answered when their invocation finishes', async () => {
    const ids = await queue(100);
    const reads = { count: 0 };
    const store = app.infra.invocations;
    const get = store.get.bind(store);
    store.get = (orgId, id) => {
      reads.count++;
      return get(orgId, id);
    };
    try {
      const waiting = ids.flatMap((id) =>
        Array.from({ length: 10 }, () =>
          app.http.get<InvocationBody>(`/v1/llm/invocations/${id}?wait=25`, setup.org.adminKey),
        ),
      );
      await eventually(() => app.infra.completions.waiting === 1000, 15_000, 20);
      const readsWhileWaiting = reads.count;
      expect(readsWhileWaiting).toBe(1000); // one read per waiter on arrival
      await new Promise((r) => setTimeout(r, 1000));
      expect(reads.count).toBe(readsWhileWaiting); // nobody polls while waiting

      const redis = new Redis(TEST_REDIS_URL);
      const [, subscribers] = (await redis.pubsub('NUMSUB', `${app.prefix}:invocations:finished`)) as [
        string,
        number,
      ];
      redis.disconnect();
      expect(Number(subscribers)).toBe(1);

      for (const id of ids)
        await app.http.post(`/v1/llm/invocations/${id}/cancel`, undefined, setup.org.adminKey);
      const answers = await Promise.all(waiting);
      expect(answers.every((a) => a.status === 200 && a.body.status === 'cancelled')).toBe(true);
      // One read per cancel request; the signal carried the invocation, so no waiter read again.
      // That also proves each was answered by the signal, not by its 25 s running out, which reads
      // the row once more (the next test): no clock is needed, which a loaded machine would fail.
      expect(reads.count).toBe(readsWhileWaiting + ids.length);
      expect(app.infra.completions.waiting).toBe(0);
    } finally {
      store.get = get;
    }
  }, 60_000); // 100 invokes, 1,000 waiters and 100 cancels: slow on a loaded 2-core machine

  it('reads the row once when the wait runs out', async () => {
    const [id] = await queue(1);
    const started = Date.now();
    const res = await app.http.get<InvocationBody>(`/v1/llm/invocations/${id}?wait=1`, setup.org.adminKey);
    expect(res.body.status).toBe('queued');
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(app.infra.completions.waiting).toBe(0);
  });
});
