import { existsSync, mkdirSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import Redis from 'ioredis';
import type { EmbeddedStore } from './embedded-postgres';
import { freePort } from './free-port';
import { spawnStore, whenReady } from './store-process';

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
 * under `<dataDir>/redis` so queued jobs and caps survive a restart. It runs in a process group
 * of its own and ends with the service (store-process.ts).
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
  const server = spawnStore(binary, [...args, '--maxmemory-policy', 'noeviction', '--daemonize', 'no'], {
    // redis-server flushes its append-only file on SIGTERM.
    stopSignal: 'SIGTERM',
    onOutput: log,
  });
  const url = `redis://127.0.0.1:${port}`;
  await whenReady(server, waitForPing(url, 10_000), 'redis-server');
  return { url, stop: server.stop };
}
