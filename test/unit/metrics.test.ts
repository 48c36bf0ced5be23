import type { Knex } from '@mikro-orm/knex';
import { routeLabel } from '../../api/http/metrics';
import { ProviderError } from '../../domain/providers';
import { isLoopback, metricsAccess } from '../../infra/metrics/metrics-access';
import { Metrics } from '../../infra/metrics/metrics';
import { storeSources, type ScrapeSources } from '../../infra/metrics/scrape-sources';
import type { JobQueues } from '../../infra/queue/job-queues';
import { parsePrometheusText, samplesOf, valueOf } from '../support/prometheus-text';

const TOKEN = 'metrics-token-0123456789';

const working: ScrapeSources = {
  queueJobs: async () => [{ queue: 'invoke', state: 'waiting', count: 3 }],
  reservationsOutstanding: async () => 2,
  auditBacklog: async () => 5,
};

const scrape = async (metrics: Metrics) => parsePrometheusText(await metrics.scrape());

describe('metrics access', () => {
  it.each(['127.0.0.1', '127.1.2.3', '::1', 'localhost', 'LOCALHOST', '::ffff:127.0.0.1'])(
    'treats %s as loopback',
    (host) => expect(isLoopback(host)).toBe(true),
  );

  it.each(['0.0.0.0', '::', '10.0.0.1', '192.168.1.2', 'example.com', '127.0.0.1.example.com'])(
    'treats %s as reachable from elsewhere',
    (host) => expect(isLoopback(host)).toBe(false),
  );

  it('is open on loopback and off elsewhere without a token', () => {
    expect(metricsAccess('127.0.0.1', undefined, undefined)).toBe('open');
    expect(metricsAccess('0.0.0.0', undefined, `Bearer ${TOKEN}`)).toBe('off');
  });

  it('checks the bearer token wherever it binds once one is configured', () => {
    for (const host of ['127.0.0.1', '0.0.0.0']) {
      expect(metricsAccess(host, TOKEN, undefined)).toBe('missing_token');
      expect(metricsAccess(host, TOKEN, TOKEN)).toBe('missing_token'); // not a Bearer header
      expect(metricsAccess(host, TOKEN, `Bearer ${TOKEN}x`)).toBe('wrong_token');
      expect(metricsAccess(host, TOKEN, `Bearer ${TOKEN.slice(1)}`)).toBe('wrong_token');
      expect(metricsAccess(host, TOKEN, `bearer  ${TOKEN}`)).toBe('token_ok');
    }
  });
});

describe('route labels', () => {
  it("uses the router's template, then a named fixed path, else `unmatched`", () => {
    expect(routeLabel('/v1/sessions/:id', '/metrics')).toBe('/v1/sessions/:id');
    expect(routeLabel(undefined, '/metrics')).toBe('/metrics');
    expect(routeLabel(undefined, undefined)).toBe('unmatched');
    expect(routeLabel(/^\/v1\/x$/, undefined)).toBe('unmatched');
  });
});

describe('Metrics', () => {
  it('keeps each instance on its own registry', async () => {
    const a = new Metrics(working);
    const b = new Metrics(working);
    a.requestFinished('GET', '/health', 200, 0.01);
    expect(valueOf(await scrape(a), 'cp_http_requests_total', { route: '/health' })).toBe(1);
    expect(valueOf(await scrape(b), 'cp_http_requests_total', { route: '/health' })).toBeUndefined();
  });

  it('folds unknown HTTP methods into OTHER', async () => {
    const metrics = new Metrics(working);
    metrics.requestFinished('PROPFIND', 'unmatched', 405, 0.001);
    expect(valueOf(await scrape(metrics), 'cp_http_requests_total', { method: 'OTHER' })).toBe(1);
  });

  it('reads the gauges from their sources when scraped', async () => {
    const samples = await scrape(new Metrics(working));
    expect(valueOf(samples, 'cp_queue_jobs', { queue: 'invoke', state: 'waiting' })).toBe(3);
    expect(valueOf(samples, 'cp_reservations_outstanding')).toBe(2);
    expect(valueOf(samples, 'cp_audit_backlog')).toBe(5);
  });

  it('still answers when the sources fail: no queue samples, NaN for the others', async () => {
    const down = new Error('down');
    const metrics = new Metrics({
      queueJobs: () => Promise.reject(down),
      reservationsOutstanding: () => Promise.reject(down),
      auditBacklog: () => Promise.reject(down),
    });
    const samples = await scrape(metrics);
    expect(samplesOf(samples, 'cp_queue_jobs')).toEqual([]);
    expect(valueOf(samples, 'cp_reservations_outstanding')).toBeNaN();
    expect(valueOf(samples, 'cp_audit_backlog')).toBeNaN();
  });

  it('times provider calls and counts failures by their code', async () => {
    const metrics = new Metrics(working);
    await metrics.timeProviderCall('openai', async () => 'ok');
    const timeout = new ProviderError('retryable', 'provider_timeout', 'timed out');
    await expect(metrics.timeProviderCall('openai', () => Promise.reject(timeout))).rejects.toBe(timeout);
    await expect(
      metrics.timeProviderCall('openai', () => Promise.reject(new Error('bug'))),
    ).rejects.toThrow();
    const samples = await scrape(metrics);
    const count = (outcome: string) =>
      valueOf(samples, 'cp_provider_request_duration_seconds_count', { provider: 'openai', outcome });
    expect([count('ok'), count('error')]).toEqual([1, 2]);
    const errors = (kind: string) =>
      valueOf(samples, 'cp_provider_errors_total', { provider: 'openai', kind });
    expect([errors('provider_timeout'), errors('unexpected')]).toEqual([1, 1]);
  });

  it('times jobs by outcome and passes their result and error through', async () => {
    const metrics = new Metrics(working);
    await expect(metrics.timeJob('invoke', 'invocation.run', async () => 7)).resolves.toBe(7);
    await expect(
      metrics.timeJob('invoke', 'invocation.run', () => Promise.reject(new Error('retry'))),
    ).rejects.toThrow('retry');
    const samples = await scrape(metrics);
    const count = (outcome: string) =>
      valueOf(samples, 'cp_job_duration_seconds_count', { queue: 'invoke', job: 'invocation.run', outcome });
    expect([count('completed'), count('failed')]).toEqual([1, 1]);
  });

  it('records how long jobs waited for a worker, by queue and job', async () => {
    const metrics = new Metrics(working);
    metrics.jobWaited('invoke', 'invocation.run', 0.004);
    metrics.jobWaited('invoke', 'invocation.run', 0.03);
    const samples = await scrape(metrics);
    const labels = { queue: 'invoke', job: 'invocation.run' };
    expect(valueOf(samples, 'cp_job_wait_seconds_count', labels)).toBe(2);
    expect(valueOf(samples, 'cp_job_wait_seconds_sum', labels)).toBeCloseTo(0.034, 9);
    expect(valueOf(samples, 'cp_job_wait_seconds_bucket', { ...labels, le: '0.005' })).toBe(1);
  });

  it('adds up the cost of finished invocations in USD', async () => {
    const metrics = new Metrics(working);
    metrics.invocationFinished('succeeded', 1_500_000);
    metrics.invocationFinished('denied', 0);
    const samples = await scrape(metrics);
    expect(valueOf(samples, 'cp_cost_settled_usd_total')).toBe(1.5);
    expect(valueOf(samples, 'cp_invocations_finished_total', { status: 'denied' })).toBe(1);
  });
});

describe('store sources', () => {
  it('give up on a store that does not answer, so a scrape never hangs', async () => {
    const never = () => new Promise<never>(() => undefined);
    const sources = storeSources({
      queues: { queue: () => ({ getJobCounts: never }) } as unknown as JobQueues,
      ledger: { outstanding: never },
      knex: {} as Knex,
    });
    const started = Date.now();
    await expect(sources.reservationsOutstanding()).rejects.toThrow('did not answer in time');
    await expect(sources.queueJobs()).rejects.toThrow('did not answer in time');
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
