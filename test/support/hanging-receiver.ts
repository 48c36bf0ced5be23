import { randomBytes } from 'node:crypto';
import { startLocalServer, type Arrived, type LocalServer } from './local-server';

/** A receiver whose `/hang-*` paths never answer and whose other paths answer 200. */
export class Receiver {
  readonly arrivals: Arrived[] = [];
  readonly open = new Map<string, number>();
  readonly mostOpen = new Map<string, number>();
  private server!: LocalServer;

  async start(): Promise<void> {
    this.server = await startLocalServer((req, res) => {
      this.arrivals.push(req);
      const { path } = req;
      if (!path.startsWith('/hang-')) return void res.writeHead(200).end('ok');
      const now = (this.open.get(path) ?? 0) + 1;
      this.open.set(path, now);
      this.mostOpen.set(path, Math.max(now, this.mostOpen.get(path) ?? 0));
      res.on('close', () => this.open.set(path, (this.open.get(path) ?? 1) - 1));
    });
  }

  url(kind: 'hang' | 'ok'): string {
    return this.server.url(`/${kind}-${randomBytes(4).toString('hex')}`);
  }

  at(url: string): Arrived[] {
    const path = new URL(url).pathname;
    return this.arrivals.filter((a) => a.path === path);
  }

  stop(): Promise<void> {
    return this.server.stop();
  }
}
