/**
 * How long the invoke jobs of a row waited for a worker, from the service's own
 * `cp_job_wait_seconds` histogram: its buckets read from every process's /metrics before and after
 * the row. Between the API's job add and the worker's start lies the longest wait of a call under
 * load (the README's "Where a call waits").
 */
import { request } from 'undici';
import { parsePrometheusText, samplesOf, valueOf } from '../test/support/prometheus-text';

const INVOKE = { queue: 'invoke', job: 'invocation.run' };

/** Cumulative counts by bucket bound (seconds), and the sum of the waits. */
export interface WaitTally {
  buckets: Map<number, number>;
  sum: number;
}

async function tallyOf(metricsUrl: string): Promise<WaitTally> {
  const res = await request(`${metricsUrl}/metrics`);
  const samples = parsePrometheusText(await res.body.text());
  const buckets = new Map<number, number>();
  for (const s of samplesOf(samples, 'cp_job_wait_seconds_bucket', INVOKE))
    buckets.set(Number(s.labels.le === '+Inf' ? Infinity : s.labels.le), s.value);
  return { buckets, sum: valueOf(samples, 'cp_job_wait_seconds_sum', INVOKE) ?? 0 };
}

/** The invoke jobs' waits so far, over every process that runs workers (each serves /metrics). */
export async function readJobWait(metricsUrls: string[]): Promise<WaitTally> {
  const all = await Promise.all(metricsUrls.map(tallyOf));
  const buckets = new Map<number, number>();
  for (const t of all) for (const [le, n] of t.buckets) buckets.set(le, (buckets.get(le) ?? 0) + n);
  return { buckets, sum: all.reduce((s, t) => s + t.sum, 0) };
}

/** The waits between two readings: what a row added. */
export function waitsDuring(before: WaitTally, after: WaitTally): WaitTally {
  const buckets = new Map(
    [...after.buckets].map(([le, n]) => [le, n - (before.buckets.get(le) ?? 0)] as const),
  );
  return { buckets, sum: after.sum - before.sum };
}

/** A row's waits: the mean, and the bucket bound that holds p50 and p99. */
export function jobWaitLine(during: WaitTally): string {
  const count = during.buckets.get(Infinity) ?? 0;
  if (count === 0) return 'invoke jobs waited for a worker: none started';
  const bounds = [...during.buckets.keys()].sort((a, b) => a - b);
  const bound = (p: number) => {
    const le = bounds.find((b) => (during.buckets.get(b) ?? 0) >= p * count) ?? Infinity;
    return le === Infinity ? 'over the largest bucket' : `≤ ${le * 1000} ms`;
  };
  const mean = (during.sum / count) * 1000;
  return `invoke jobs waited for a worker: mean ${mean.toFixed(1)} ms, p50 ${bound(0.5)}, p99 ${bound(0.99)}`;
}
