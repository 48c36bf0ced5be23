/**
 * BENCH_GC=1: the service processes run with `node --trace-gc-nvp`, which prints a line per
 * garbage collection on stdout, and each row reports what the collector did per call. What an
 * invoke promotes out of the young generation is what fills the old one, and the old one's
 * mark-compacts are the open loop's spikes, so this is the figure an allocation change moves.
 */

export interface GcTally {
  /** Young-generation collections. */
  scavenges: number;
  /** Bytes those moved to the old generation. */
  promotedBytes: number;
  /** Full (mark-compact) collections. */
  markCompacts: number;
  /** Time the process stood still for all of them. */
  pauseMs: number;
}

const FIELDS = ['scavenges', 'promotedBytes', 'markCompacts', 'pauseMs'] as const;

/** A tally made field by field. */
const tally = (value: (field: keyof GcTally) => number): GcTally =>
  Object.fromEntries(FIELDS.map((f) => [f, value(f)])) as unknown as GcTally;

const NONE: GcTally = tally(() => 0);

const field = (line: string, name: string): number =>
  Number(new RegExp(`(?:^|\\s)${name}=([\\d.]+)`).exec(line)?.[1] ?? 0);

/** The tallies of every traced process, fed its stdout as it comes (lines may arrive split). */
export class GcTrace {
  private readonly tallies = new Map<number, GcTally>();
  private readonly partial = new Map<number, string>();

  feed(pid: number, chunk: string): void {
    const text = (this.partial.get(pid) ?? '') + chunk;
    const lines = text.split('\n');
    this.partial.set(pid, lines.pop() ?? '');
    for (const line of lines) this.count(pid, line);
  }

  read(pid: number | 'self'): GcTally {
    return (pid !== 'self' && this.tallies.get(pid)) || NONE;
  }

  private count(pid: number, line: string): void {
    const kind = / gc=(\w+)/.exec(line)?.[1];
    if (!kind) return; // the service's own log lines
    const t = { ...this.read(pid) };
    if (kind === 's') {
      t.scavenges += 1;
      t.promotedBytes += field(line, 'promoted');
    } else if (kind === 'mc') t.markCompacts += 1;
    t.pauseMs += field(line, 'pause');
    this.tallies.set(pid, t);
  }
}

/** Between two readings of one component's processes: what its collector did per completed call. */
export const gcPerCall = (before: GcTally, after: GcTally, calls: number): GcTally =>
  tally((f) =>
    // A row has a few mark-compacts: counted, not divided.
    f === 'markCompacts' ? after[f] - before[f] : (after[f] - before[f]) / Math.max(1, calls),
  );

export const sumTallies = (tallies: GcTally[]): GcTally =>
  tallies.reduce((sum, t) => tally((f) => sum[f] + t[f]), NONE);

/** One report line: per component, promoted KB and pause µs per call, scavenges per 1,000 calls, mark-compacts in the row. */
export function gcLine(perComponent: Record<string, GcTally>): string {
  return (
    'GC per call: ' +
    Object.entries(perComponent)
      .map(
        ([name, t]) =>
          `${name} promoted ${(t.promotedBytes / 1024).toFixed(1)} KB, pause ${(t.pauseMs * 1000).toFixed(0)} µs, ` +
          `${(t.scavenges * 1000).toFixed(1)} scavenges per 1000, ${t.markCompacts} mark-compacts`,
      )
      .join('; ')
  );
}
