import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request as a test's local server received it, its body read. */
export interface Arrived {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** When its body had arrived (Date.now()). */
  at: number;
}

export interface LocalServer {
  port: number;
  url(path: string): string;
  /** Closes every connection, answered or not, and the server. */
  stop(): Promise<void>;
}

/**
 * An HTTP server on a free port of 127.0.0.1 (a webhook receiver, a provider's stand-in):
 * `answer` gets each request once its body is read, and may leave it unanswered.
 */
export async function startLocalServer(
  answer: (req: Arrived, res: ServerResponse) => void,
): Promise<LocalServer> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      answer({ path: req.url ?? '', headers: req.headers, body, at: Date.now() }, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: (path) => `http://127.0.0.1:${port}${path}`,
    stop: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
