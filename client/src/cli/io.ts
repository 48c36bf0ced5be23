/** Where the CLI writes and what it reads from its surroundings; bin.ts passes the process's own. */
export interface CliIo {
  env: Record<string, string | undefined>;
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  /** Whether stderr is a terminal a spinner can be drawn on (canSpinOn): spinners are drawn only then. */
  isTTY?: boolean;
  fetch?: typeof fetch;
  /** Ends a waiting command (`audit tail --follow`, `invoke`) early. */
  signal?: AbortSignal;
}

/**
 * Whether a spinner can be drawn on the stream: a terminal that reports its width. One that
 * reports 0 columns (a pty never sized: `script`, `docker exec -t` before its first resize)
 * would have the spinner clear an infinite number of lines, forever.
 */
export const canSpinOn = (stream: { isTTY?: boolean; columns?: number }): boolean =>
  stream.isTTY === true && (stream.columns ?? 0) > 0;
