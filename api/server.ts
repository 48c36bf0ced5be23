import { createServer, type Server } from 'node:http';
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

export async function startApi(
  infra: Infra,
  port = infra.config.PORT,
  host = infra.config.HOST,
  options: AppOptions = {},
): Promise<RunningApi> {
  // Waiting clients are answered from one subscription per process: open it before taking requests.
  await infra.completions.listen();
  const server = createServer(createApp(infra, options).callback());
  server.keepAliveTimeout = 65_000;
  answerClientErrors(server);
  if (!infra.config.CP_TRUST_PROXY)
    capConnectionsPerClient(server, infra.config.CP_MAX_CONNECTIONS_PER_CLIENT);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
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
