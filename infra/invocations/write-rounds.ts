import type { WriteOutcome } from '../../domain/invocations/invocation-store';

/** PostgreSQL refused a settled charge past a session cap (constraints sessions_*_cap). */
export const isCapViolation = (err: unknown): boolean => {
  const e = err as { code?: string; constraint?: string; previous?: unknown; cause?: unknown };
  if (e?.code === '23514' && e.constraint?.startsWith('sessions_')) return true;
  return Boolean(e?.previous && isCapViolation(e.previous)) || Boolean(e?.cause && isCapViolation(e.cause));
};

/** Two batches touching the same sessions in another order: PostgreSQL aborts one; run it again. */
const isRetryableConflict = (err: unknown): boolean => {
  const code = (err as { code?: string })?.code;
  return code === '40P01' || code === '40001';
};

/**
 * Splits writes into rounds with one write per invocation: two writes to the same row in one
 * statement would both look applied. Rounds run in order, so the second sees the first's result.
 */
export async function inRounds<W extends { invocationId: string }>(
  writes: W[],
  apply: (round: W[]) => Promise<Set<string>>,
): Promise<WriteOutcome[]> {
  const outcomes: WriteOutcome[] = new Array<WriteOutcome>(writes.length).fill('skipped');
  let left = writes.map((write, index) => ({ write, index }));
  while (left.length > 0) {
    const seen = new Set<string>();
    const round = left.filter(({ write }) => !seen.has(write.invocationId) && seen.add(write.invocationId));
    left = left.filter((item) => !round.includes(item));
    const applied = await apply(round.map((r) => r.write));
    for (const { write, index } of round)
      outcomes[index] = applied.has(write.invocationId) ? 'applied' : 'skipped';
  }
  return outcomes;
}

/** Retries a statement PostgreSQL aborted as a deadlock or serialization failure. */
export async function withConflictRetry<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (err) {
      if (!isRetryableConflict(err) || attempt >= 5) throw err;
    }
  }
}
