import { startTestApp, type TestApp } from '../../test/support/test-app';
import { approverKeys, requireApproval } from '../../test/support/approval-fixtures';
import { mintKey } from '../../test/support/factories';
import { openSession, setUpInvoking, type InvokeSetup } from '../../test/support/invoke-fixtures';
import { collect, ControlPlaneError, createControlPlane, type Invocation } from '../src';
import { recordingFetch } from './support/recording-fetch';

const SLOW = 'mock-slow-2500';
const hello = (sessionId: string, model = 'mock-1') => ({
  session_id: sessionId,
  model,
  messages: [{ role: 'user' as const, content: 'hello' }],
  max_tokens: 16,
});

/** invoke(), its long poll, its errors and approvals, against the real API and workers. */
describe('control-plane-client: invoke', () => {
  let app: TestApp;
  let setup: InvokeSetup;

  beforeAll(async () => {
    app = await startTestApp({ workers: true });
    setup = await setUpInvoking(app.http, { models: ['mock-1', SLOW, 'mock-approve'] });
  });
  afterAll(() => app?.close());

  const client = (options: Parameters<typeof createControlPlane>[0] = {}) =>
    createControlPlane({ baseUrl: app.http.baseUrl, apiKey: setup.org.adminKey, ...options });
  const session = (max_cost_usd = 1) =>
    openSession(app.http, setup.org.adminKey, { agent_id: setup.agentId, max_cost_usd });

  it('follows a 202 to its Location and long-polls until the invocation succeeded', async () => {
    const { id: sessionId } = await session();
    const recorder = recordingFetch();
    const seen: string[] = [];

    const done = await client({ fetch: recorder.fetch }).invoke(hello(sessionId, SLOW), {
      waitSeconds: 1,
      onUpdate: (inv) => seen.push(inv.status),
    });

    expect(done.status).toBe('succeeded');
    expect(done.output).toEqual({ role: 'assistant', content: 'mock reply to: hello' });
    // docs/mock-provider.md: 2 + 3 + 3 input tokens, 20 bytes of reply = 5 output; $1 and $2 per Mtok.
    expect(done.usage).toEqual({ input_tokens: 8, output_tokens: 5 });
    expect(done.cost_usd).toBeCloseTo((8 * 1 + 5 * 2) / 1e6, 12);

    const [submit] = recorder.to('/v1/llm/invoke', 'POST');
    expect(submit!.status).toBe(202);
    expect(submit!.url.searchParams.get('wait')).toBe('1');
    const location = submit!.responseHeaders!.get('location');
    expect(location).toBe(`/v1/llm/invocations/${done.id}`);
    const polls = recorder.to(location!, 'GET');
    expect(polls.length).toBeGreaterThanOrEqual(1);
    expect(polls.every((p) => p.url.searchParams.get('wait') === '1')).toBe(true);
    expect(seen[0]).not.toBe('succeeded');
    expect(seen.at(-1)).toBe('succeeded');
  });

  it('returns at once when the submit itself finished (200)', async () => {
    const { id: sessionId } = await session();
    const recorder = recordingFetch();
    const done = await client({ fetch: recorder.fetch }).invoke(hello(sessionId), { waitSeconds: 10 });
    expect(done.status).toBe('succeeded');
    expect(recorder.to('/v1/llm/invoke', 'POST')[0]!.status).toBe(200);
    expect(recorder.exchanges).toHaveLength(1);
  });

  it('returns the invocation as last seen, not final, once timeoutMs passes', async () => {
    const { id: sessionId } = await session();
    const started = Date.now();
    const seen = await client().invoke(hello(sessionId, SLOW), { waitSeconds: 1, timeoutMs: 1000 });
    expect(['queued', 'evaluating', 'running']).toContain(seen.status);
    expect(Date.now() - started).toBeLessThan(2400);
  });

  it('invokes once when the answer to the POST is lost: the retry replays the first answer', async () => {
    const { id: sessionId } = await session();
    let dropped = 0;
    const recorder = recordingFetch({
      after: (request) =>
        new URL(request.url).pathname === '/v1/llm/invoke' && !dropped++
          ? new TypeError('fetch failed')
          : undefined,
    });
    const cp = client({ fetch: recorder.fetch });

    const done = await cp.invoke(hello(sessionId), { idempotencyKey: 'invoke-once-1' });

    expect(done.status).toBe('succeeded');
    const posts = recorder.to('/v1/llm/invoke', 'POST');
    expect(posts.map((p) => p.requestHeaders.get('idempotency-key'))).toEqual([
      'invoke-once-1',
      'invoke-once-1',
    ]);
    const invocations = await collect(cp.invocations.list({ session_id: sessionId }));
    expect(invocations.map((i) => i.id)).toEqual([done.id]);
  });

  it('generates an Idempotency-Key for each invoke when none is given', async () => {
    const { id: sessionId } = await session();
    const recorder = recordingFetch();
    const cp = client({ fetch: recorder.fetch });
    await cp.invoke(hello(sessionId));
    await cp.invoke(hello(sessionId));
    const keys = recorder.to('/v1/llm/invoke', 'POST').map((p) => p.requestHeaders.get('idempotency-key'));
    expect(keys).toHaveLength(2);
    expect(new Set(keys).size).toBe(2);
    expect((await collect(cp.invocations.list({ session_id: sessionId }))).length).toBe(2);
  });

  it('raises budget_exceeded (402) with the cap, limit and what remains', async () => {
    const { id: sessionId } = await session(0.000001);
    const error = await client()
      .invoke(hello(sessionId))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ControlPlaneError);
    expect(error).toMatchObject({ status: 402, errorCode: 'budget_exceeded' });
    const { body } = error as ControlPlaneError;
    expect(body.cap).toBe('cost');
    expect(body.limit).toBe(0.000001);
    expect(typeof body.remaining).toBe('number');
  });

  it('raises session_not_open (409) once the session is closed', async () => {
    const cp = client();
    const { id: sessionId } = await cp.sessions.open({ agent_id: setup.agentId, max_cost_usd: 1 });
    const closed = await cp.sessions.close(sessionId);
    expect(closed.status).toBe('closed');
    const error = (await cp.invoke(hello(sessionId)).catch((e: unknown) => e)) as ControlPlaneError;
    expect(error).toBeInstanceOf(ControlPlaneError);
    expect(error).toMatchObject({ status: 409, errorCode: 'session_not_open' });
    expect(error.requestId).toMatch(/\S/);
  });

  it('waits through awaiting_approval until a person approves', async () => {
    await requireApproval(app.http, setup.org.adminKey, { model: 'mock-approve' });
    // The agent asks; a key the admin minted for a person approves (a key the requester minted
    // could not: it would be the requester approving itself).
    const agentKey = (await mintKey(app.http, setup.org.adminKey, ['llm:invoke'], 'agent')).key;
    const [approverKey] = await approverKeys(app.http, setup.org.adminKey, 1);
    const approver = client({ apiKey: approverKey });
    const { id: sessionId } = await session();
    const seen: Invocation['status'][] = [];

    const running = client({ apiKey: agentKey }).invoke(hello(sessionId, 'mock-approve'), {
      waitSeconds: 1,
      onUpdate: (inv) => seen.push(inv.status),
    });
    // Approve only once the client has seen the pause, so it must wait through it.
    await eventuallyFind(async () => seen.filter((status) => status === 'awaiting_approval'));
    const [pending, ...more] = await collect(
      approver.approvals.list({ status: 'pending', session_id: sessionId }),
    );
    expect(more).toEqual([]);
    const approved = await approver.approvals.approve(pending!.id, { comment: 'fine' });
    expect(approved.status).toBe('approved');
    const done = await running;

    expect(done.status).toBe('succeeded');
    expect(done.id).toBe(pending!.invocation_id);
    expect(done.output?.content).toBe('mock reply to: hello');
  });
});

/** The first item a list has, asking again until one appears (for up to 10 s). */
async function eventuallyFind<T>(list: () => Promise<T[]>): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const [first] = await list();
    if (first) return first;
    if (Date.now() > deadline) throw new Error('nothing appeared in 10 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
