import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { findOnPath, startEmbeddedRedis } from '../../infra/embedded/embedded-redis';

describe('embedded redis-server for the quick start', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'cp-redis-'));
  const path = process.env.PATH;
  afterEach(() => {
    process.env.PATH = path;
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('says how to get a redis-server when there is none on the PATH', async () => {
    process.env.PATH = dataDir;
    expect(findOnPath('redis-server')).toBeNull();
    await expect(startEmbeddedRedis(dataDir, () => undefined)).rejects.toThrow(
      /apt-get install redis-server[\s\S]*brew install redis[\s\S]*REDIS_URL/,
    );
  });

  it('keeps data in its append-only file across restarts', async () => {
    const first = await startEmbeddedRedis(dataDir, () => undefined);
    const client = new Redis(first.url);
    await client.set('survives', 'yes');
    client.disconnect();
    await first.stop();
    const second = await startEmbeddedRedis(dataDir, () => undefined);
    const again = new Redis(second.url);
    expect(await again.get('survives')).toBe('yes');
    again.disconnect();
    await second.stop();
  });

  // A timer left running holds a Jest worker (or `npm start`'s shutdown) past the end.
  it('leaves no timer running once stopped, though its first pings failed', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((t) => t === 'Timeout').length;
    const before = timers();
    const redis = await startEmbeddedRedis(dataDir, () => undefined);
    await redis.stop();
    expect(timers()).toBe(before);
  });
});
