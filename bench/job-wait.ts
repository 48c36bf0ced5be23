/**
 * How long the invoke jobs of a row waited for a worker, from the service's own
 * `cp_job_wait_seconds` histogram: its buckets read from every process's /metrics before and after
 * the row. Between the API's job add and the worker's start lies the longest wait of a call under
 * load (the README's "Where a call waits").
 */
import { request } from 'undici';
import { parsePrometheusText, samplesOf, valueOf } from '../test/support/prometheus-text';

const INVOKE = { queue: 'invoke', job: 'invocation.run' };

/**
 * Cumulative counts by bucket bound (seconds), and the sum of the waits; with them, the sync
 * invokes an API process took itself (CP_SYNC_INVOKES_IN_API) by outcome: ran, handed_over, queued.
 */
export interface WaitTally {
  buckets: Map<number, number>;
  sum: number;
  inApi: Map<string, number>;
}

async function tallyOf(metricsUrl: string): Promise<WaitTally> {
  const res = await request(`${metricsUrl}/metrics`);
  const samples = parsePrometheusText(await res.body.text());
  const buckets = new Map<number, number>();
  for (const s of samplesOf(samples, 'cp_job_wait_seconds_bucket', INVOKE))
    buckets.set(Number(s.labels.le === '+Inf' ? Infinity : s.labels.le), s.value);
  const inApi = new Map<string, number>();
  for (const s of samplesOf(samples, 'cp_sync_invokes_in_api_total'))
    inApi.set(s.labels.outcome ?? '', s.value);
  return { buckets, sum: valueOf(samples, 'cp_job_wait_seconds_sum', INVOKE) ?? 0, inApi };
}

const added = <K>(into: Map<K, number>, from: Map<K, number>, sign = 1): Map<K, number> => {
  for (const [k, n] of from) into.set(k, (into.get(k) ?? 0) + sign * n);
  return into;
};

/** The invoke jobs' waits so far, over every process that runs workers (each serves /metrics). */
export async function readJobWait(metricsUrls: string[]): Promise<WaitTally> {
  const all = await Promise.all(metricsUrls.map(tallyOf));
  return {
    buckets: all.reduce((sum, t) => added(sum, t.buckets), new Map<number, number>()),
    sum: all.reduce((s, t) => s + t.sum, 0),
    inApi: all.reduce((sum, t) => added(sum, t.inApi), new Map<string, number>()),
  };
}

/** The waits between two readings: what a row added. */
export function waitsDuring(before: WaitTally, after: WaitTally): WaitTally {
  return {
    buckets: added(added(new Map(), after.buckets), before.buckets, -1),
    sum: after.sum - before.sum,
    inApi: added(added(new Map(), after.inApi), before.inApi, -1),
  };
}

/** A row's waits: the mean, and the bucket bound that holds p50 and p99. */
export function jobWaitLine(during: WaitTally): string {
  return [waitLine(during), inApiLine(during)].filter(Boolean).join('\n' + ''.padEnd(34) + ' ');
}

/** Where the sync invokes an API process took went (none when the option is off). */
function inApiLine({ inApi }: WaitTally): string {
  const parts = [...inApi].filter(([, n]) => n > 0).map(([outcome, n]) => `${outcome} ${n}`);
  return parts.length ? `sync invokes the API took: ${parts.join(', ')}` : '';
}

function waitLine(during: WaitTally): string {
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
