import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { TEST_MASTER_KEY } from './test-app';

const ROOT = join(__dirname, '..', '..');

export interface WorkerProcess {
  child: ChildProcess;
  pid: number;
  output(): string;
  /** Kills it at once (SIGKILL, like a crash) and waits until it is gone. */
  kill(): Promise<void>;
  /** SIGTERM, then SIGKILL after `timeoutMs`. */
  stop(timeoutMs?: number): Promise<void>;
}

/**
 * A real worker process (`main.ts --role worker`), as an operator runs it, on the given stores,
 * or an API process (`--role api`, on a port of its own choosing). Resolves once it logged that it
 * is ready.
 */
export async function startWorkerProcess(
  env: Record<string, string>,
  timeoutMs = 30_000,
  role: 'worker' | 'api' = 'worker',
): Promise<WorkerProcess> {
  const ready = role === 'worker' ? 'ready: worker running' : 'ready: listening on';
  const child = spawn(process.execPath, ['--import', 'tsx', 'main.ts', '--role', role], {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_ENV: 'test',
      LOG_LEVEL: 'debug',
      CP_MASTER_KEY: TEST_MASTER_KEY,
      CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true',
      PORT: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d) => (out += String(d)));
  child.stderr?.on('data', (d) => (out += String(d)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const deadline = Date.now() + timeoutMs;
  while (!out.includes(ready)) {
    if (child.exitCode !== null) throw new Error(`${role} exited early:\n${out}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${role} not ready within ${timeoutMs} ms:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const gone = () => child.exitCode !== null || child.signalCode !== null;
  return {
    child,
    pid: child.pid as number,
    output: () => out,
    kill: async () => {
      process.removeListener('exit', killOnExit);
      if (gone()) return;
      child.kill('SIGKILL');
      await exited;
    },
    stop: async (stopTimeoutMs = 15_000) => {
      process.removeListener('exit', killOnExit);
      if (gone()) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), stopTimeoutMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * Several worker processes started at once. If one does not become ready, the others are killed
 * before the error is thrown: a test whose set-up fails has nothing to stop them with (one such
 * worker outlived a CI run by two hours).
 */
export async function startWorkerProcesses(
  env: Record<string, string>,
  count: number,
): Promise<WorkerProcess[]> {
  const started = await Promise.allSettled(Array.from({ length: count }, () => startWorkerProcess(env)));
  const workers = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (!failed) return workers;
  await Promise.all(workers.map((w) => w.kill()));
  throw failed.reason;
}
