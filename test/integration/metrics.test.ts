import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../../api/app';
import { QUEUES } from '../../domain/jobs';
import type { Infra } from '../../infra/container';
import { QUEUE_STATES } from '../../infra/metrics/scrape-sources';
import { startMetricsServer } from '../../workers/metrics-server';
import { eventually } from '../support/eventually';
import { invoke, invokeBody, openSession, setUpInvoking, type InvokeSetup } from '../support/invoke-fixtures';
import { parsePrometheusText, samplesOf, valueOf, type Sample } from '../support/prometheus-text';
import { startTestApp, type TestApp } from '../support/test-app';

const TOKEN = 'metrics-token-0123456789';

let app: TestApp;
let setup: InvokeSetup;

beforeAll(async () => {
  app = await startTestApp({ workers: true });
  setup = await setUpInvoking(app.http);
});

afterAll(async () => {
  await app?.close();
});

async function get(url: string, token?: string) {
  const res = await fetch(url, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
}

async function scrape(baseUrl = app.http.baseUrl): Promise<Sample[]> {
  const res = await get(`${baseUrl}/metrics`);
  expect(res.status).toBe(200);
  expect(res.type).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheusText(res.text);
}

const requestsTo = (samples: Sample[], route: string, status = '200') =>
  valueOf(samples, 'cp_http_requests_total', { method: 'GET', route, status }) ?? 0;

/** The same API on its own port, with other access settings (HOST is only read, not bound). */
async function serveWith(config: Partial<Infra['config']>): Promise<{ url: string; server: Server }> {
  const server = createServer(
    createApp({ ...app.infra, config: { ...app.infra.config, ...config } }).callback(),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe('GET /metrics', () => {
  let before: Sample[];
  let after: Sample[];
  let sessionId: string;
  let invocation: { id: string; status: string; cost_usd: number };

  beforeAll(async () => {
    before = await scrape();
    const session = await openSession(app.http, setup.org.adminKey, {
      agent_id: setup.agentId,
      max_cost_usd: 5,
    });
    sessionId = session.id;
    const res = await invoke(app.http, setup.org.adminKey, invokeBody(sessionId));
    invocation = res.body;
    for (let i = 0; i < 2; i++) await app.http.get(`/v1/sessions/${sessionId}`, setup.org.adminKey);
    await app.http.get(`/v1/llm/invocations/${invocation.id}`, setup.org.adminKey);
    await app.http.get(`/v1/no-such-thing/${sessionId}`, setup.org.adminKey);
    await fetch(`${app.http.baseUrl}/docs/assets/docs.js`);
    after = await scrape();
  });

  it('counts requests by route template, never by the raw path', () => {
    expect(invocation.status).toBe('succeeded');
    expect(requestsTo(after, '/v1/sessions/:id') - requestsTo(before, '/v1/sessions/:id')).toBe(2);
    expect(requestsTo(after, '/v1/llm/invocations/:id')).toBe(1);
    expect(valueOf(after, 'cp_http_requests_total', { route: 'unmatched', status: '404' })).toBe(1);
    const routes = new Set(samplesOf(after, 'cp_http_requests_total').map((s) => s.labels.route));
    expect(routes).toContain('/metrics');
    expect(requestsTo(after, '/docs')).toBe(1); // a page's middleware names its route too
    for (const route of routes) {
      expect(route).not.toContain(sessionId);
      expect(route).not.toContain(invocation.id);
      expect(route).not.toMatch(/_[0-9a-z]{16,}/); // no generated id of any kind
    }
    const timed = valueOf(after, 'cp_http_request_duration_seconds_count', {
      method: 'GET',
      route: '/v1/sessions/:id',
      status: '200',
    });
    expect(timed).toBe(requestsTo(after, '/v1/sessions/:id'));
  });

  it('counts the finished invocation, its cost, its provider call and its jobs', () => {
    expect(valueOf(after, 'cp_invocations_finished_total', { status: 'succeeded' })).toBe(1);
    expect(invocation.cost_usd).toBeGreaterThan(0);
    expect(valueOf(after, 'cp_cost_settled_usd_total')).toBeCloseTo(invocation.cost_usd, 9);
    const calls = { provider: 'mock', outcome: 'ok' };
    expect(valueOf(after, 'cp_provider_request_duration_seconds_count', calls)).toBeGreaterThanOrEqual(1);
    for (const [queue, job] of [['invoke', 'invocation.run']] as const) {
      expect(
        valueOf(after, 'cp_job_duration_seconds_count', { queue, job, outcome: 'completed' }),
      ).toBeGreaterThanOrEqual(1);
      expect(valueOf(after, 'cp_job_wait_seconds_count', { queue, job })).toBeGreaterThanOrEqual(1);
    }
  });

  it("dates a delayed job's wait from when it was due, not from when it was added", async () => {
    const labels = { queue: 'approvals', job: 'approval.expire' };
    const waited = (samples: Sample[]) => ({
      count: valueOf(samples, 'cp_job_wait_seconds_count', labels) ?? 0,
      sum: valueOf(samples, 'cp_job_wait_seconds_sum', labels) ?? 0,
    });
    const start = waited(await scrape());
    // An expiry for an approval that does not exist: the job finds nothing to expire.
    const payload = { approval_id: 'apr_metrics_probe', org_id: setup.org.orgId };
    await app.infra.queues.enqueue('approval.expire', payload, undefined, 1_500);
    const end = await eventually(async () => {
      const now = waited(await scrape());
      return now.count > start.count && now;
    });
    expect(end.count).toBe(start.count + 1);
    expect(end.sum - start.sum).toBeLessThan(1); // from when it was added, it waited 1.5 s
  });

  it('reports every queue by state, the audit backlog and the held reservations when scraped', async () => {
    for (const queue of Object.values(QUEUES))
      for (const state of QUEUE_STATES)
        expect(valueOf(after, 'cp_queue_jobs', { queue, state })).toBeGreaterThanOrEqual(0);
    expect(valueOf(after, 'cp_audit_backlog')).toBeGreaterThanOrEqual(0);
    expect(valueOf(after, 'cp_reservations_outstanding')).toBe(0);
    // A reservation held (as a rebuild from PostgreSQL holds an in-flight attempt's) is counted.
    await app.infra.ledger.restore({
      sessionId: 'ses_metrics_probe',
      limits: { costMicros: 1_000_000, calls: null, tokens: null },
      spent: { costMicros: 0, calls: 0, tokens: 0 },
      expiresAt: new Date(Date.now() + 60_000),
      inFlight: [{ invocationId: 'inv_metrics_probe:1', amounts: { costMicros: 10, calls: 1, tokens: 10 } }],
    });
    expect(valueOf(await scrape(), 'cp_reservations_outstanding')).toBe(1);
    await app.infra.ledger.settle('ses_metrics_probe', 'inv_metrics_probe:1', {
      costMicros: 0,
      calls: 0,
      tokens: 0,
    });
    expect(valueOf(await scrape(), 'cp_reservations_outstanding')).toBe(0);
  });

  it('counts the audit events no signed checkpoint covers yet', async () => {
    const pending = async () => Number((await app.infra.knex('audit_outbox').count('* as n'))[0]?.n);
    // Start from an empty outbox: an earlier test's events, sealed between the two reads below,
    // would count in the first and not in the scrape.
    await eventually(async () => (await pending()) === 0);
    // Holding the org's chain head keeps the sealing job (every 200 ms) from taking the event.
    const hold = await app.infra.knex.transaction();
    try {
      await hold('audit_heads').where({ org_id: setup.org.orgId }).forUpdate().first();
      await app.infra.knex('audit_outbox').insert({
        id: 'evt_metrics_probe',
        org_id: setup.org.orgId,
        at: new Date(),
        actor_type: 'system',
        actor_id: 'system',
        action: 'metrics.probe',
        resource_type: 'probe',
        resource_id: 'probe',
        outcome: 'success',
        details: '{}',
      });
      const least = await pending();
      // On a loaded machine a scrape's 1 s budget for the count can run out (NaN): scrape again.
      const backlog = await eventually(async () => {
        const value = valueOf(await scrape(), 'cp_audit_backlog');
        return value === undefined || Number.isNaN(value) ? null : value;
      });
      expect(least).toBeGreaterThanOrEqual(1);
      expect(backlog).toBeGreaterThanOrEqual(least);
      expect(backlog).toBeLessThanOrEqual(await pending());
    } finally {
      await hold.commit();
    }
    await eventually(async () => valueOf(await scrape(), 'cp_audit_backlog') === 0);
  });

  it("includes the process's standard metrics", () => {
    expect(valueOf(after, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
  });

  it('answers another method with 405 method_not_allowed', async () => {
    const res = await fetch(`${app.http.baseUrl}/metrics`, { method: 'POST' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
    expect(await res.json()).toMatchObject({ error_code: 'method_not_allowed' });
  });
});

describe('access to /metrics', () => {
  const servers: Server[] = [];
  const serve = async (config: Partial<Infra['config']>) => {
    const served = await serveWith(config);
    servers.push(served.server);
    return served.url;
  };
  afterAll(async () => {
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  });

  it('is off (404 not_found) on a non-loopback bind without a token', async () => {
    const url = await serve({ HOST: '0.0.0.0', CP_METRICS_TOKEN: undefined });
    const res = await get(`${url}/metrics`);
    expect(res.status).toBe(404);
    expect(JSON.parse(res.text)).toMatchObject({ error_code: 'not_found', request_id: expect.any(String) });
  });

  it('takes only the configured bearer token on a non-loopback bind', async () => {
    const url = await serve({ HOST: '0.0.0.0', CP_METRICS_TOKEN: TOKEN });
    const none = await get(`${url}/metrics`);
    expect(none.status).toBe(401);
    expect(JSON.parse(none.text)).toMatchObject({ error_code: 'missing_credentials' });
    const wrong = await get(`${url}/metrics`, `${TOKEN}x`);
    expect(wrong.status).toBe(401);
    expect(JSON.parse(wrong.text)).toMatchObject({ error_code: 'invalid_api_key' });
    expect(wrong.text).not.toContain(TOKEN);
    const right = await get(`${url}/metrics`, TOKEN);
    expect(right.status).toBe(200);
    expect(parsePrometheusText(right.text).length).toBeGreaterThan(0);
  });

  it('requires the token on a loopback bind too once one is configured', async () => {
    const url = await serve({ HOST: '127.0.0.1', CP_METRICS_TOKEN: TOKEN });
    expect((await get(`${url}/metrics`)).status).toBe(401);
    expect((await get(`${url}/metrics`, TOKEN)).status).toBe(200);
  });
});

describe('the worker metrics server', () => {
  it("serves this process's metrics on its own port", async () => {
    const server = await startMetricsServer(app.infra, 0);
    try {
      expect(server.port).toBeGreaterThan(0);
      const samples = await scrape(`http://127.0.0.1:${server.port}`);
      expect(samplesOf(samples, 'cp_job_duration_seconds_count').length).toBeGreaterThan(0);
      expect(samplesOf(samples, 'cp_queue_jobs').length).toBe(
        Object.values(QUEUES).length * QUEUE_STATES.length,
      );
      expect((await get(`http://127.0.0.1:${server.port}/other`)).status).toBe(404);
    } finally {
      await server.close();
    }
  });

  it('applies the same token rule', async () => {
    const config = { ...app.infra.config, HOST: '127.0.0.1', CP_METRICS_TOKEN: TOKEN };
    const server = await startMetricsServer({ ...app.infra, config }, 0);
    try {
      const url = `http://127.0.0.1:${server.port}/metrics`;
      const none = await get(url);
      expect(none.status).toBe(401);
      expect(JSON.parse(none.text)).toMatchObject({ error_code: 'missing_credentials' });
      expect((await get(url, 'not-the-token-0000')).status).toBe(401);
      expect((await get(url, TOKEN)).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});
