/**
 * Lets a repeating failure be logged once a minute per key (an org, a webhook, a job name) rather
 * than at the rate of the loop that meets it (the seal runs five times a second). `due` says
 * whether to log now and how many occurrences were left out since the last line.
 */
/** The least time between two lines of one key. */
export const LOG_EVERY_MS = 60_000;

export class OnceAMinute {
  private readonly last = new Map<string, { at: number; skipped: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  due(key: string): { log: false } | { log: true; skipped: number } {
    const at = this.now();
    const last = this.last.get(key);
    if (last && at - last.at < LOG_EVERY_MS) {
      last.skipped++;
      return { log: false };
    }
    this.last.set(key, { at, skipped: 0 });
    return { log: true, skipped: last?.skipped ?? 0 };
  }
}
