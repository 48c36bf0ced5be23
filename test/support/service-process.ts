import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

export const ROOT = join(__dirname, '..', '..');

export interface ServiceProcess {
  child: ChildProcess;
  output: () => string;
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
  /**
   * Sends SIGTERM to the whole process group (npm, tsx and node, as a process manager would)
   * and resolves with whether the service itself logged a clean stop.
   */
  stop(timeoutMs?: number): Promise<boolean>;
}

/**
 * The URL a service started with PORT=0 listens on, from its ready line. A port picked before the
 * start can be taken before the service binds it (by the suite, or by its own embedded stores).
 */
export function listeningUrl(proc: ServiceProcess | string): string {
  const output = typeof proc === 'string' ? proc : proc.output();
  const url = /ready: listening on (http:\/\/[\d.]+:\d+)/.exec(output)?.[1];
  if (!url) throw new Error(`no ready line with a URL:\n${output}`);
  return url;
}

/** Runs an npm script of the project as a real child process, as an operator would. */
export function runNpmScript(script: string, env: Record<string, string | undefined>): ServiceProcess {
  const child = spawn('npm', ['run', '--silent', script], {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'development', ...env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d) => (out += String(d)));
  child.stderr?.on('data', (d) => (out += String(d)));
  // 'close', not 'exit': npm may exit before the service it runs, which holds the same pipes.
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-(child.pid as number), signal);
    } catch {
      // already gone
    }
  };
  return {
    child,
    output: () => out,
    waitFor: async (pattern, timeoutMs = 30_000) => {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(out)) {
        if (child.exitCode !== null) throw new Error(`${script} exited early:\n${out}`);
        if (Date.now() > deadline)
          throw new Error(`${script}: no ${pattern} within ${timeoutMs} ms:\n${out}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    stop: async (timeoutMs = 15_000) => {
      if (child.exitCode === null && child.signalCode === null) {
        signalGroup('SIGTERM');
        const timer = setTimeout(() => signalGroup('SIGKILL'), timeoutMs);
        await exited;
        clearTimeout(timer);
      }
      return /stopped cleanly/.test(out);
    },
  };
}
