import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { DelayedError } from 'bullmq';
import { ProviderError, type Provider } from '../../domain/providers';
import { microsToUsd } from '../../domain/pricing/cost';
import type { ScrapeSources } from './scrape-sources';

/** Seconds: from a fast Redis-only job to a provider call near its 60 s deadline. */
const SLOW_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/** Seconds a job waits for a worker: a few milliseconds when workers keep up, minutes in a backlog. */
const WAIT_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

const HTTP_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** A provider failure by its stable code (provider_timeout, ...); anything else is a bug, named once. */
const failureKind = (err: unknown): string =>
  err instanceof ProviderError && /^[a-z_]{1,40}$/.test(err.code) ? err.code : 'unexpected';

/**
 * This process's Prometheus metrics, on a registry of its own (tests run many apps in one
 * process). Counters and histograms are bumped on the hot path; the gauges that read Redis or
 * PostgreSQL are read only when scraped, each bounded by a timeout (scrape-sources.ts).
 */
export class Metrics {
  readonly registry = new Registry();

  private readonly httpRequests = new Counter({
    name: 'cp_http_requests_total',
    help: 'HTTP requests answered, by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });

  private readonly httpDuration = new Histogram({
    name: 'cp_http_request_duration_seconds',
    help: 'Time from a request arriving to its response being finished',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });

  private readonly jobDuration = new Histogram({
    name: 'cp_job_duration_seconds',
    help: 'Time a worker spent on a job, by queue, job name and outcome (completed, failed, or deferred: put back to wait its turn)',
    labelNames: ['queue', 'job', 'outcome'] as const,
    buckets: SLOW_BUCKETS,
    registers: [this.registry],
  });

  private readonly jobWait = new Histogram({
    name: 'cp_job_wait_seconds',
    help: 'Time a job waited in its queue, from when it was due until a worker started it (first starts only)',
    labelNames: ['queue', 'job'] as const,
    buckets: WAIT_BUCKETS,
    registers: [this.registry],
  });

  private readonly invocationsFinished = new Counter({
    name: 'cp_invocations_finished_total',
    help: 'Invocations that reached a final status, counted by the process that finished them',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });

  private readonly costSettled = new Counter({
    name: 'cp_cost_settled_usd_total',
    help: 'USD charged to invocations (all their provider attempts), counted when they finish',
    registers: [this.registry],
  });

  private readonly providerDuration = new Histogram({
    name: 'cp_provider_request_duration_seconds',
    help: 'Provider calls (whole stream for streamed calls), by provider and outcome (ok or error)',
    labelNames: ['provider', 'outcome'] as const,
    buckets: SLOW_BUCKETS,
    registers: [this.registry],
  });

  private readonly providerErrors = new Counter({
    name: 'cp_provider_errors_total',
    help: 'Failed provider calls by provider and error code',
    labelNames: ['provider', 'kind'] as const,
    registers: [this.registry],
  });

  private readonly usageOverReported = new Counter({
    name: 'cp_provider_usage_capped_total',
    help:
      'Provider answers that reported more tokens than their request allows; each was charged at the ' +
      "request's bound, and its audit entry records what was reported (provider_reported_usage)",
    labelNames: ['provider'] as const,
    registers: [this.registry],
  });

  private readonly syncRuns = new Counter({
    name: 'cp_sync_invokes_in_api_total',
    help:
      'Invokes whose client waited, as an API process with CP_SYNC_INVOKES_IN_API took them: run there ' +
      '(ran), begun there and handed to the queue (handed_over), or queued because it had no room (queued)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  constructor(sources: ScrapeSources) {
    collectDefaultMetrics({ register: this.registry });
    this.scrapedGauges(sources);
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  /** `route` must be a template (or `unmatched`), never a raw path: ids would be unbounded labels. */
  requestFinished(method: string, route: string, status: number, seconds: number): void {
    const labels = { method: HTTP_METHODS.has(method) ? method : 'OTHER', route, status: String(status) };
    this.httpRequests.inc(labels);
    this.httpDuration.observe(labels, seconds);
  }

  /** A worker started a job that had waited `seconds` in its queue (see workers/queue-wait.ts). */
  jobWaited(queue: string, job: string, seconds: number): void {
    this.jobWait.observe({ queue, job }, seconds);
  }

  async timeJob<T>(queue: string, job: string, run: () => Promise<T>): Promise<T> {
    const end = this.jobDuration.startTimer({ queue, job });
    try {
      const result = await run();
      end({ outcome: 'completed' });
      return result;
    } catch (err) {
      // A job put back to wait its turn did not fail.
      end({ outcome: err instanceof DelayedError ? 'deferred' : 'failed' });
      throw err;
    }
  }

  async timeProviderCall<T>(provider: Provider, call: () => Promise<T>): Promise<T> {
    const end = this.providerDuration.startTimer({ provider });
    try {
      const result = await call();
      end({ outcome: 'ok' });
      return result;
    } catch (err) {
      end({ outcome: 'error' });
      this.providerErrors.inc({ provider, kind: failureKind(err) });
      throw err;
    }
  }

  syncRun(outcome: 'ran' | 'handed_over' | 'queued'): void {
    this.syncRuns.inc({ outcome });
  }

  usageCapped(provider: Provider): void {
    this.usageOverReported.inc({ provider });
  }

  invocationFinished(status: string, costMicros: number): void {
    this.invocationsFinished.inc({ status });
    if (costMicros > 0) this.costSettled.inc(microsToUsd(costMicros));
  }

  /**
   * Gauges read at scrape time. A source that fails or is slow shows as no samples (queues) or NaN,
   * never as a stale or zero value.
   */
  private scrapedGauges(sources: ScrapeSources): void {
    new Gauge({
      name: 'cp_queue_jobs',
      help: 'Jobs in each BullMQ queue by state, read when scraped',
      labelNames: ['queue', 'state'] as const,
      registers: [this.registry],
      async collect() {
        this.reset();
        const counts = await sources.queueJobs().catch(() => []);
        for (const { queue, state, count } of counts) this.set({ queue, state }, count);
      },
    });
    new Gauge({
      name: 'cp_reservations_outstanding',
      help: 'Cap reservations held and not yet settled (the ledger lease index), read when scraped',
      registers: [this.registry],
      collect: readInto(sources.reservationsOutstanding),
    });
    new Gauge({
      name: 'cp_audit_backlog',
      help: 'Audit events written and not yet sealed into a signed checkpoint, read when scraped',
      registers: [this.registry],
      collect: readInto(sources.auditBacklog),
    });
  }
}

/** A gauge's collect that sets it from `read`, or to NaN (unknown) when `read` fails. */
const readInto = (read: () => Promise<number>) =>
  async function (this: Gauge): Promise<void> {
    this.set(await read().catch(() => NaN));
  };
