import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../infra/embedded/free-port';
import { findOnPath } from '../../infra/embedded/embedded-redis';

export { freePort };

const REDIS_SERVER = process.env.TEST_REDIS_SERVER_BIN ?? findOnPath('redis-server') ?? 'redis-server';

/**
 * A private, throwaway `redis-server` (no persistence) that a test may kill and start again on
 * the same port, to see how the service behaves while Redis is away.
 */
export class RedisServer {
  private child: ChildProcess | null = null;
  private readonly dir = mkdtempSync(join(tmpdir(), 'cp-test-redis-'));
  private readonly killOnExit = () => this.child?.kill('SIGKILL');

  private constructor(readonly port: number) {}

  static async start(): Promise<RedisServer> {
    const server = new RedisServer(await freePort());
    await server.start();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.child !== null;
  }

  /** Starts the server (again) on its port; resolves once it accepts connections. */
  async start(timeoutMs = 10_000): Promise<void> {
    if (this.child) return;
    const child = spawn(
      REDIS_SERVER,
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        this.dir,
        '--daemonize',
        'no',
        '--loglevel',
        'notice',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.child = child;
    process.once('exit', this.killOnExit);
    let output = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => fail(new Error(`redis-server did not start in ${timeoutMs} ms`)),
        timeoutMs,
      );
      const fail = (err: Error) => {
        clearTimeout(timer);
        child.kill('SIGKILL');
        this.child = null;
        process.removeListener('exit', this.killOnExit);
        reject(new Error(`${err.message}\n${output}`));
      };
      child.once('error', fail);
      child.once('exit', (code) => fail(new Error(`redis-server exited with ${code}`)));
      child.stdout?.on('data', (chunk: Buffer) => {
        output += String(chunk);
        if (output.includes('Ready to accept connections')) {
          clearTimeout(timer);
          child.removeAllListeners('exit');
          child.removeAllListeners('error');
          resolve();
        }
      });
      child.stderr?.on('data', (chunk: Buffer) => (output += String(chunk)));
    });
  }

  /** Kills the server abruptly (SIGKILL, like a crash) and waits for it to be gone. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = null;
    process.removeListener('exit', this.killOnExit);
    if (child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  }

  /** Stops the server without closing a connection (SIGSTOP): it hangs, as a frozen host does. */
  freeze(): void {
    this.child?.kill('SIGSTOP');
  }

  /** Lets a frozen server go on (SIGCONT). */
  thaw(): void {
    this.child?.kill('SIGCONT');
  }

  /** Kills the server and removes its directory. */
  async stop(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
