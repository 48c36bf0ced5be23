/**
 * How long the invoke jobs of a row waited for a worker, from the service's own
 * `cp_job_wait_seconds` histogram: its buckets read from every process's /metrics before and after
 * the row. Between the API's job add and the worker's start lies the longest wait of a call under
 * load (the README's "Where a call waits").
 */
import { request } from 'undici';
import { parsePrometheusText, samplesOf } from '../test/support/prometheus-text';

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
  const sum = samplesOf(samples, 'cp_job_wait_seconds_sum', INVOKE)[0]?.value ?? 0;
  return { buckets, sum };
}

/** The invoke jobs' waits so far, over every process that runs workers (each serves /metrics). */
export async function readJobWait(metricsUrls: string[]): Promise<WaitTally> {
  const all = await Promise.all(metricsUrls.map(tallyOf));
  const buckets = new Map<number, number>();
  for (const t of all) for (const [le, n] of t.buckets) buckets.set(le, (buckets.get(le) ?? 0) + n);
  return { buckets, sum: all.reduce((s, t) => s + t.sum, 0) };
}

/** The row's waits: how many, the mean, and the bucket bound that holds p50 and p99. */
export function jobWaitLine(before: WaitTally, after: WaitTally): string {
  const bounds = [...after.buckets.keys()].sort((a, b) => a - b);
  const during = (le: number) => (after.buckets.get(le) ?? 0) - (before.buckets.get(le) ?? 0);
  const count = during(Infinity);
  if (count === 0) return 'invoke jobs waited for a worker: none started';
  const bound = (p: number) => {
    const le = bounds.find((b) => during(b) >= p * count) ?? Infinity;
    return le === Infinity ? 'over the largest bucket' : `≤ ${le * 1000} ms`;
  };
  const mean = ((after.sum - before.sum) / count) * 1000;
  return `invoke jobs waited for a worker: mean ${mean.toFixed(1)} ms, p50 ${bound(0.5)}, p99 ${bound(0.99)}`;
}
