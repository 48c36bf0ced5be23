import { run } from '../../src/cli/main';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON (for `--json` runs). */
  json<T = Record<string, unknown>>(): T;
}

export interface CliRunOptions {
  env?: Record<string, string | undefined>;
  isTTY?: boolean;
  signal?: AbortSignal;
  fetch?: typeof fetch;
  /** Sees the output so far after every write, for commands that are still running. */
  watch?(output: { stdout: string; stderr: string }): void;
}

/** Runs the CLI in-process, as `control-plane <argv>` with CP_BASE_URL and CP_API_KEY set. */
export function cliRunner(defaults: { baseUrl: string; apiKey?: string }) {
  return async (argv: string[], options: CliRunOptions = {}): Promise<CliResult> => {
    let stdout = '';
    let stderr = '';
    const code = await run(argv, {
      env: { CP_BASE_URL: defaults.baseUrl, CP_API_KEY: defaults.apiKey, ...options.env },
      stdout: { write: (text: string) => ((stdout += text), options.watch?.({ stdout, stderr })) },
      stderr: { write: (text: string) => ((stderr += text), options.watch?.({ stdout, stderr })) },
      isTTY: options.isTTY ?? false,
      signal: options.signal,
      fetch: options.fetch,
    });
    return { code, stdout, stderr, json: <T>() => JSON.parse(stdout) as T };
  };
}
