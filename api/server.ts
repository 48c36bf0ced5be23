import { createServer, type Server, type ServerOptions } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Infra } from '../infra/container';
import { createApp, type AppOptions } from './app';
import { answerClientErrors } from './http/client-errors';
import { capConnectionsPerClient } from './http/connections-per-client';

export interface RunningApi {
  server: Server;
  url: string;
  close(): Promise<void>;
}

/**
 * How long a request may take to arrive (not to be answered: long polls and streams are not cut).
 * Node refuses a headers timeout above the request's, and checks both only every
 * connectionsCheckingInterval (30 s unless set), which would add up to that to each.
 */
function arrivalLimits(infra: Infra): ServerOptions {
  const requestTimeout = infra.config.CP_REQUEST_TIMEOUT_MS;
  const headersTimeout = Math.min(infra.config.CP_HEADERS_TIMEOUT_MS, requestTimeout);
  return { requestTimeout, headersTimeout, connectionsCheckingInterval: Math.min(1000, headersTimeout) };
}

/** A failed listen, naming the variables to change (QA: `HOST=not-a-host` said only ENOTFOUND). */
function listenError(err: Error, host: string, port: number): Error {
  const code = (err as NodeJS.ErrnoException).code;
  const fix =
    code === 'EADDRINUSE'
      ? 'set PORT to a free port, or stop what listens there'
      : code === 'EACCES'
        ? 'set PORT to one above 1023, or run with the right to bind it'
        : 'set HOST to an address of this machine (127.0.0.1, 0.0.0.0 or ::) or a name that resolves to one';
  return new Error(`cannot listen on HOST=${host} PORT=${port}: ${err.message}; ${fix}`, { cause: err });
}

export async function startApi(
  infra: Infra,
  port = infra.config.PORT,
  host = infra.config.HOST,
  options: AppOptions = {},
): Promise<RunningApi> {
  // Waiting clients are answered from one subscription per process: open it before taking requests.
  await infra.completions.listen();
  const server = createServer(arrivalLimits(infra), createApp(infra, options).callback());
  server.keepAliveTimeout = 65_000;
  answerClientErrors(server);
  if (!infra.config.CP_TRUST_PROXY)
    capConnectionsPerClient(server, infra.config.CP_MAX_CONNECTIONS_PER_CLIENT);
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) => reject(listenError(err, host, port)));
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
  return {
    server,
    url,
    // Stop taking connections, answer long polls now, let requests in flight finish, then drop
    // idle keep-alives.
    close: () =>
      new Promise<void>((resolve) => {
        // close() drops the connections idle now; one whose request finishes later would linger
        // until keepAliveTimeout, so connections are dropped as they fall idle.
        const sweep = setInterval(() => server.closeIdleConnections(), 50);
        server.close(() => {
          clearInterval(sweep);
          resolve();
        });
        infra.completions.stopWaiting();
      }),
  };
}
