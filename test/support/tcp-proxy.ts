import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy on the loopback interface, for cutting a service off from a store: `stop()` closes
 * the listener and destroys every open connection (the store looks unreachable: connections
 * break, new ones are refused); `start()` listens again on the same port.
 */
export class TcpProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private listenPort = 0;

  constructor(
    readonly targetHost: string,
    readonly targetPort: number,
  ) {}

  /** The port the proxy listens on (fixed after the first start). */
  get port(): number {
    return this.listenPort;
  }

  get running(): boolean {
    return this.server !== null;
  }

  /** `url` with its host and port replaced by the proxy's. */
  proxiedUrl(url: string): string {
    const proxied = new URL(url);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(this.listenPort);
    return proxied.toString();
  }

  async start(): Promise<void> {
    if (this.server) return;
    const server = createServer((client) => this.relay(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.listenPort, '127.0.0.1', () => {
        server.removeListener('error', reject);
        resolve();
      });
    });
    const address = server.address();
    if (typeof address === 'object' && address) this.listenPort = address.port;
    this.server = server;
  }

  /** Stops listening and breaks every connection in flight. */
  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = null;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    await closed;
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
  }

  private relay(client: Socket): void {
    const upstream = connect(this.targetPort, this.targetHost);
    this.track(client);
    this.track(upstream);
    const destroyBoth = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', destroyBoth);
    upstream.on('error', destroyBoth);
    client.on('close', destroyBoth);
    upstream.on('close', destroyBoth);
    client.pipe(upstream);
    upstream.pipe(client);
  }
}
