/** Where the CLI writes and what it reads from its surroundings; bin.ts passes the process's own. */
export interface CliIo {
  env: Record<string, string | undefined>;
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  /** Whether stderr is a terminal: spinners are drawn only then. */
  isTTY?: boolean;
  fetch?: typeof fetch;
  /** Ends a waiting command (`audit tail --follow`, `invoke`) early. */
  signal?: AbortSignal;
}
