import { execFileSync, spawn } from 'node:child_process';
import { spawnStore, whenReady } from '../../infra/embedded/store-process';

const groupOf = (pid: number): number =>
  Number(execFileSync('ps', ['-o', 'pgid=', '-p', String(pid)], { encoding: 'utf8' }).trim());

/** The commands still running in a process group. */
const membersOf = (pgid: number): string[] => {
  try {
    return execFileSync('pgrep', ['-g', String(pgid), '-a'], { encoding: 'utf8' })
      .trim()
      .split('\n');
  } catch {
    return []; // pgrep exits 1 when it finds none
  }
};

async function until(check: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

const quiet = { onOutput: () => undefined };

describe('an embedded store process', () => {
  it('runs in a process group of its own, so a Ctrl-C to the service group does not reach it', async () => {
    const store = spawnStore('sleep', ['300'], { stopSignal: 'SIGTERM', ...quiet });
    try {
      expect(groupOf(store.pid)).toBe(store.pid);
      expect(groupOf(store.pid)).not.toBe(groupOf(process.pid));
      expect(membersOf(store.pid).some((line) => line.endsWith('sleep 300'))).toBe(true);
    } finally {
      await store.stop();
    }
    expect(membersOf(store.pid)).toEqual([]);
  });

  it('stops its server when the service dies, even by SIGKILL', async () => {
    const code = `
      const { spawnStore } = require(${JSON.stringify(require.resolve('../../infra/embedded/store-process'))});
      const store = spawnStore('sleep', ['300'], { stopSignal: 'SIGTERM', onOutput: () => undefined });
      console.log(store.pid);`;
    const service = spawn(process.execPath, ['--import', 'tsx', '-e', code], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const pid = await new Promise<number>((resolve) =>
      service.stdout.once('data', (d) => resolve(Number(d))),
    );
    expect(membersOf(pid).some((line) => line.endsWith('sleep 300'))).toBe(true);
    service.kill('SIGKILL');
    expect(await until(() => membersOf(pid).length === 0, 10_000)).toBe(true);
  });

  it('says so, and leaves nothing running, when the server exits while starting', async () => {
    const store = spawnStore('sh', ['-c', 'exit 3'], { stopSignal: 'SIGTERM', ...quiet });
    const never = new Promise<void>(() => undefined);
    await expect(whenReady(store, never, 'the test server')).rejects.toThrow(
      'the test server exited while starting; run with LOG_LEVEL=debug to see its log',
    );
    expect(membersOf(store.pid)).toEqual([]);
  });

  it('stops the server, and says what to do, when it is not ready in time', async () => {
    const store = spawnStore('sleep', ['300'], { stopSignal: 'SIGTERM', ...quiet });
    const never = new Promise<void>(() => undefined);
    await expect(whenReady(store, never, 'the test server', 200)).rejects.toThrow(
      'the test server was not ready within 200 ms; run with LOG_LEVEL=debug to see its log',
    );
    expect(membersOf(store.pid)).toEqual([]);
  });

  it('stops the server when it does not become ready', async () => {
    const store = spawnStore('sleep', ['300'], { stopSignal: 'SIGTERM', ...quiet });
    await expect(whenReady(store, Promise.reject(new Error('no answer')), 'the test server')).rejects.toThrow(
      'no answer',
    );
    expect(membersOf(store.pid)).toEqual([]);
  });
});
