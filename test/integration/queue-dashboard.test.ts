import { randomBytes } from 'node:crypto';
import { Worker } from 'bullmq';
import { submitJobId } from '../../domain/jobs';
import { bullConnectionOptions } from '../../infra/redis/connections';
import { signupOrg, type SignedUpOrg } from '../support/factories';
import { eventually, invoke, openSession } from '../support/invoke-fixtures';
import { startTestApp, type TestApp } from '../support/test-app';

jest.setTimeout(60_000);

/**
 * The operator's queue dashboard (bull-board) at /admin/queues: off without its token, opened by
 * that token alone (Bearer or Basic), read-only, and showing jobs by their ids: no prompt, no
 * secret, no SQL values in a failure.
 */
const TOKEN = randomBytes(24).toString('hex');
const PROMPT = 'SECRET-PROMPT-123 please summarise the merger terms';
const CREDENTIAL_SECRET = 'mock-SECRET-KEY-456';
const QUEUE_NAMES = ['guardian', 'invoke', 'approvals', 'webhooks', 'maintenance'];

let app: TestApp;
let org: SignedUpOrg;
beforeAll(async () => {
  app = await startTestApp({ env: { CP_QUEUE_DASHBOARD_TOKEN: TOKEN } });
  org = await signupOrg(app.http);
});
afterAll(() => app.close());

const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

async function dashboard(path: string, authorization?: string, method = 'GET', on = app) {
  const res = await fetch(`${on.http.baseUrl}/admin/queues${path}`, {
    method,
    headers: authorization ? { authorization } : {},
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

describe('without CP_QUEUE_DASHBOARD_TOKEN', () => {
  let off: TestApp;
  beforeAll(async () => {
    off = await startTestApp();
  });
  afterAll(() => off.close());

  it.each(['', '/', '/api/queues', '/static/js/nothing.js'])(
    'answers 404 at /admin/queues%s',
    async (path) => {
      const res = await dashboard(path, `Bearer ${TOKEN}`, 'GET', off);
      expect(res.status).toBe(404);
      expect(JSON.parse(res.text)).toMatchObject({ error_code: 'not_found', request_id: expect.any(String) });
    },
  );
});

describe('wrong dashboard tokens, counted per address', () => {
  let limited: TestApp;
  beforeAll(async () => {
    limited = await startTestApp({
      env: { CP_QUEUE_DASHBOARD_TOKEN: TOKEN, CP_AUTH_FAILURES_PER_MINUTE: '3' },
    });
  });
  afterAll(() => limited.close());

  it('answers 429 rate_limited past the limit, to the right token too, until the minute is out', async () => {
    for (let i = 0; i < 3; i++)
      expect((await dashboard('/api/queues', `Bearer wrong-${i}-${TOKEN}`, 'GET', limited)).status).toBe(401);
    const refused = await dashboard('/api/queues', `Bearer ${TOKEN}`, 'GET', limited);
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.text)).toMatchObject({ error_code: 'rate_limited' });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('does not count a request that presents no token (a browser before its sign-in prompt)', async () => {
    const fresh = await startTestApp({
      env: { CP_QUEUE_DASHBOARD_TOKEN: TOKEN, CP_AUTH_FAILURES_PER_MINUTE: '1' },
    });
    try {
      for (let i = 0; i < 3; i++)
        expect((await dashboard('/api/queues', undefined, 'GET', fresh)).status).toBe(401);
      expect((await dashboard('/api/queues', `Bearer ${TOKEN}`, 'GET', fresh)).status).toBe(200);
    } finally {
      await fresh.close();
    }
  });
});

describe('with CP_QUEUE_DASHBOARD_TOKEN', () => {
  it('asks a browser for Basic credentials when none are given', async () => {
    for (const path of ['', '/api/queues']) {
      const res = await dashboard(path);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Basic realm="queues"');
      expect(JSON.parse(res.text)).toMatchObject({
        error_code: 'missing_credentials',
        request_id: expect.any(String),
      });
    }
  });

  it.each([
    ['a wrong Bearer token', `Bearer ${TOKEN}x`],
    ['a prefix of the token', `Bearer ${TOKEN.slice(0, 20)}`],
    ['a wrong Basic password', basic('operator', 'not-the-token-at-all')],
    ['the token as Basic user name', basic(TOKEN, '')],
    ['another scheme', `Token ${TOKEN}`],
  ])('refuses %s with 401 invalid_credentials', async (_what, authorization) => {
    const res = await dashboard('/api/queues', authorization);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Basic realm="queues"');
    expect(JSON.parse(res.text).error_code).toMatch(/^(invalid|missing)_credentials$/);
  });

  it("refuses an org's csk_ admin key and a person's dashboard session", async () => {
    for (const token of [org.adminKey, org.sessionToken]) {
      for (const authorization of [`Bearer ${token}`, basic('admin', token)]) {
        const res = await dashboard('/api/queues', authorization);
        expect(res.status).toBe(401);
        expect(JSON.parse(res.text).error_code).toBe('invalid_credentials');
      }
    }
  });

  it('opens with the token as Bearer: the page and its API over every queue', async () => {
    const page = await dashboard('', `Bearer ${TOKEN}`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.text).toContain('<base href="/admin/queues/"');
    expect(page.headers.get('cache-control')).toBe('no-store');
    const api = await dashboard('/api/queues', `Bearer ${TOKEN}`);
    expect(api.status).toBe(200);
    const names = (JSON.parse(api.text) as { queues: { name: string; readOnlyMode: boolean }[] }).queues;
    expect(names.map((q) => q.name).sort()).toEqual([...QUEUE_NAMES].sort());
    expect(names.every((q) => q.readOnlyMode)).toBe(true);
  });

  it('opens with the token as the Basic password, whatever the user name', async () => {
    for (const user of ['operator', '']) {
      const res = await dashboard('/api/queues', basic(user, TOKEN));
      expect(res.status).toBe(200);
    }
  });

  it('is read-only: a pause or a clean is refused and changes nothing', async () => {
    const pause = await dashboard('/api/queues/invoke/pause', `Bearer ${TOKEN}`, 'PUT');
    expect(pause.status).toBe(405);
    const clean = await dashboard('/api/queues/maintenance/clean/failed', `Bearer ${TOKEN}`, 'PUT');
    expect(clean.status).toBe(405);
    // Methods bull-board has no route for: 405 in the contract's shape, not its 500.
    for (const [path, method] of [
      ['/api/queues/invoke/pause', 'POST'],
      ['/api/queues/invoke/empty', 'DELETE'],
    ] as const) {
      const res = await dashboard(path, `Bearer ${TOKEN}`, method);
      expect({ method, status: res.status }).toEqual({ method, status: 405 });
      expect(res.headers.get('allow')).toBe('GET, HEAD');
      expect(JSON.parse(res.text)).toMatchObject({ error_code: 'method_not_allowed' });
    }
    expect(await app.infra.queues.queue('invoke').isPaused()).toBe(false);
  });
});

describe('what the dashboard shows of jobs', () => {
  /** An org whose agent invokes through a credential holding CREDENTIAL_SECRET. */
  async function invokingSession(): Promise<{ sessionId: string }> {
    const credential = await app.http.post<{ credential_ref: string }>(
      '/v1/credentials',
      { name: 'recognisable', provider: 'mock', secret: CREDENTIAL_SECRET },
      org.adminKey,
    );
    const agent = await app.http.post<{ id: string }>(
      '/v1/agents',
      { name: 'agent', allowed_models: ['mock-1'], credential_refs: [credential.body.credential_ref] },
      org.adminKey,
    );
    await app.http.call('PUT', '/v1/pricing/mock-1', {
      token: org.adminKey,
      body: { input_per_mtok_usd: 1, output_per_mtok_usd: 2 },
    });
    const session = await openSession(app.http, org.adminKey, { agent_id: agent.body.id, max_cost_usd: 5 });
    return { sessionId: session.id };
  }

  it('carries the invocation id and never the prompt or the credential secret', async () => {
    const { sessionId } = await invokingSession();
    // No invoke worker: the invocation's job waits in the invoke queue.
    const body = {
      session_id: sessionId,
      model: 'mock-1',
      messages: [{ role: 'user', content: PROMPT }],
      max_tokens: 16,
    };
    const res = await invoke(app.http, org.adminKey, body, 0);
    expect(res.status).toBe(202);
    const id = res.body.id;
    const jobId = submitJobId(id);
    await eventually(async () => (await app.infra.queues.queue('invoke').getJob(jobId)) ?? null);

    const answers = await Promise.all([
      ...QUEUE_NAMES.map((q) => dashboard(`/api/queues?activeQueue=${q}&status=latest`, `Bearer ${TOKEN}`)),
      dashboard(`/api/queues/invoke/${jobId}`, `Bearer ${TOKEN}`),
    ]);
    for (const answer of answers) expect(answer.status).toBe(200);
    const shown = answers.map((a) => a.text).join('\n');
    expect(shown).toContain(id);
    expect(shown).not.toContain('SECRET-PROMPT-123');
    expect(shown).not.toContain(CREDENTIAL_SECRET);
    const job = JSON.parse(answers[answers.length - 1]?.text ?? '{}').job as { data: unknown };
    expect(job.data).toEqual({ invocation_id: id, org_id: org.orgId, trace: expect.any(Object) });
  });

  it("tells a failure as a log line would: a database error's statement and values are withheld", async () => {
    const leaked = 'sk-LEAKED-789';
    const queue = app.infra.queues.queue('approvals');
    const added = await queue.add('probe.fail', {}, { attempts: 1 });
    const worker = new Worker(
      'approvals',
      async () => {
        throw new Error(`insert into "credentials" ("secret") values ('${leaked}') - duplicate key value`);
      },
      { connection: bullConnectionOptions(app.infra.urls.redisUrl), prefix: app.infra.queues.bullPrefix },
    );
    try {
      await eventually(async () => (await queue.getJobState(added.id as string)) === 'failed');
    } finally {
      await worker.close();
    }
    const one = await dashboard(`/api/queues/approvals/${added.id}`, `Bearer ${TOKEN}`);
    const page = await dashboard('/api/queues?activeQueue=approvals&status=failed', `Bearer ${TOKEN}`);
    for (const res of [one, page]) {
      expect(res.status).toBe(200);
      expect(res.text).not.toContain(leaked);
      expect(res.text).not.toContain('insert into');
    }
    const job = JSON.parse(one.text).job as { failedReason: string; stacktrace: string[] };
    expect(job.failedReason).toBe('[statement withheld] - duplicate key value');
    expect(job.stacktrace.length).toBeGreaterThan(0);
    for (const stack of job.stacktrace) expect(stack).toMatch(/^\s+at /);
  });
});
