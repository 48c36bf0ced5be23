/** Reading `npm run bench` output and summing up alternated runs of two builds (`bench/ab.ts`). */

export interface RowFigures {
  perSecond: number;
  p50: number;
  p99: number;
  /** CPU µs per call of each process the bench names (bench, stub, api, worker, postgres, redis). */
  cpu: Record<string, number>;
}

export type Side = 'base' | 'head';

export interface Run {
  side: Side;
  rows: Map<string, RowFigures>;
}

const ROW = /^(.+?)\s+(\d+ callers|at \d+\/s)\s+(\d+)\/s\s+p50\s+([\d.]+) ms\s+p99\s+([\d.]+) ms/;
const CPU = /CPU µs per call: (.*)$/;

/**
 * The processes of the service under test (the bench sums all worker processes as `worker`): what
 * its CPU per call sums, the load generator and stub left out.
 */
const SERVICE = ['api', 'worker', 'postgres', 'redis'];

/**
 * The rows a bench printed, keyed by label and load. An open-loop row's rate differs from run to
 * run (a share of that run's maximum), so it is keyed by its place among the label's open-loop rows.
 */
export function parseBenchOutput(text: string): Map<string, RowFigures> {
  const rows = new Map<string, RowFigures>();
  const openLoopRows = new Map<string, number>();
  let last: RowFigures | null = null;
  for (const line of text.split('\n')) {
    const row = ROW.exec(line);
    if (row) {
      const [, label = '', load = '', perSecond, p50, p99] = row;
      let key = `${label.trim()}, ${load}`;
      if (load.startsWith('at ')) {
        const nth = (openLoopRows.get(label) ?? 0) + 1;
        openLoopRows.set(label, nth);
        key = `${label.trim()}, open-loop row ${nth}`;
      }
      last = { perSecond: Number(perSecond), p50: Number(p50), p99: Number(p99), cpu: {} };
      rows.set(key, last);
      continue;
    }
    const cpu = CPU.exec(line);
    if (cpu && last) {
      const parts = (cpu[1] ?? '').trim().split(/\s+/);
      for (let i = 0; i + 1 < parts.length; i += 2) last.cpu[parts[i] ?? ''] = Number(parts[i + 1]);
    }
  }
  return rows;
}

export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? NaN) : ((sorted[mid - 1] ?? NaN) + (sorted[mid] ?? NaN)) / 2;
};

const serviceCpu = (row: RowFigures): number => SERVICE.reduce((sum, name) => sum + (row.cpu[name] ?? 0), 0);

/**
 * One paragraph a row: the medians of each side, head against base, and in how many pairs head
 * was ahead (runs are paired in the order they ran: the machine drifts, so only neighbours compare).
 */
export function summarize(runs: Run[]): string {
  const keys = [...new Set(runs.flatMap((r) => [...r.rows.keys()]))];
  const lines: string[] = [];
  for (const key of keys) {
    const of = (side: Side) => runs.filter((r) => r.side === side).flatMap((r) => r.rows.get(key) ?? []);
    const base = of('base');
    const head = of('head');
    if (base.length === 0 || head.length === 0) continue;
    const pairs = Math.min(base.length, head.length);
    let ahead = 0;
    for (let i = 0; i < pairs; i++) if ((head[i]?.perSecond ?? 0) > (base[i]?.perSecond ?? 0)) ahead++;
    const figure = (rows: RowFigures[], pick: (r: RowFigures) => number) => median(rows.map(pick));
    const change = (pick: (r: RowFigures) => number) => {
      const b = figure(base, pick);
      const h = figure(head, pick);
      return `${Math.round(b)} → ${Math.round(h)} (${b === 0 ? 'n/a' : `${h >= b ? '+' : ''}${(((h - b) / b) * 100).toFixed(1)}%`})`;
    };
    lines.push(
      `${key}: head ahead in ${ahead} of ${pairs} pairs`,
      `  req/s, median:                 ${change((r) => r.perSecond)}`,
      `  p99 ms, median:                ${change((r) => r.p99)}`,
      `  service CPU µs per call, median: ${change(serviceCpu)}`,
    );
    for (const name of SERVICE.filter((n) => base.some((r) => n in r.cpu)))
      lines.push(`    ${name.padEnd(10)} ${change((r) => r.cpu[name] ?? 0)}`);
  }
  return lines.join('\n');
}
