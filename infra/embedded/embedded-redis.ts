import { spawn } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import Redis from 'ioredis';
import type { EmbeddedStore } from './embedded-postgres';
import { freePort } from './free-port';

const HOW_TO_GET_ONE = [
  'no redis-server on the PATH, and REDIS_URL is not set. Either:',
  '  - install one: `apt-get install redis-server` (Debian/Ubuntu) or `brew install redis` (macOS), or',
  '  - run one: `docker compose up -d redis` and set REDIS_URL=redis://127.0.0.1:6379, or',
  '  - set REDIS_URL to a Redis 6.2+ you already have.',
].join('\n');

export function findOnPath(binary: string, path = process.env.PATH ?? ''): string | null {
  for (const dir of path.split(delimiter)) {
    const candidate = join(dir, binary);
    if (dir && existsSync(candidate)) return candidate;
  }
  return null;
}

async function waitForPing(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => undefined);
    try {
      await probe.connect();
      await probe.ping();
      return;
    } catch {
      if (Date.now() > deadline) throw new Error(`redis-server did not answer PING within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      // A probe whose connection already failed has nothing to close; disconnecting it anyway
      // leaves ioredis's 2 s disconnect timer holding the process (its stream never closes again).
      if (probe.status !== 'end') probe.disconnect();
    }
  }
}

/**
 * A `redis-server` child process for the quick start, on loopback, with its append-only file
 * under `<dataDir>/redis` so queued jobs and caps survive a restart.
 */
export async function startEmbeddedRedis(
  dataDir: string,
  log: (msg: string) => void,
): Promise<EmbeddedStore> {
  const binary = findOnPath('redis-server');
  if (!binary) throw new Error(HOW_TO_GET_ONE);
  const dir = join(dataDir, 'redis');
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--appendonly',
    'yes',
    '--save',
    '',
  ];
  const child = spawn(binary, [...args, '--maxmemory-policy', 'noeviction', '--daemonize', 'no'], {
    stdio: 'pipe',
  });
  child.stdout.on('data', (d) => log(String(d)));
  child.stderr.on('data', (d) => log(String(d)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const url = `redis://127.0.0.1:${port}`;
  await waitForPing(url, 10_000).catch((err) => {
    child.kill('SIGKILL');
    throw err;
  });
  return {
    url,
    stop: async () => {
      process.removeListener('exit', killOnExit);
      // redis-server flushes its append-only file on SIGTERM (it may have had one already).
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
