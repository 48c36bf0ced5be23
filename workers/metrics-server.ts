import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomText } from '../domain/ids';
import type { Infra } from '../infra/container';
import { metricsAccess, refusal } from '../infra/metrics/metrics-access';

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

function sendError(res: ServerResponse, status: number, code: string, message: string): void {
  const body = JSON.stringify({ error_code: code, message, request_id: `req_${randomText(20)}` });
  if (status === 401) res.setHeader('WWW-Authenticate', 'Bearer');
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8' }).end(body);
}

async function answer(infra: Infra, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = new URL(req.url ?? '/', 'http://worker').pathname;
  if (path !== '/metrics') return sendError(res, 404, 'not_found', `no route ${req.method} ${path}`);
  const { HOST, CP_METRICS_TOKEN } = infra.config;
  const refused = refusal(metricsAccess(HOST, CP_METRICS_TOKEN, req.headers.authorization));
  if (refused) return sendError(res, refused.status, refused.code, refused.message);
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.setHeader('Allow', 'GET, HEAD');
    return sendError(res, 405, 'method_not_allowed', `${req.method} is not allowed on /metrics; use GET`);
  }
  const text = await infra.metrics.scrape();
  res.writeHead(200, { 'Content-Type': infra.metrics.contentType, 'Cache-Control': 'no-store' });
  res.end(req.method === 'HEAD' ? undefined : text);
}

/**
 * A worker process has no API to serve /metrics: this serves it alone on HOST:port (port 0 picks
 * a free one), under the API's access rule.
 */
export async function startMetricsServer(infra: Infra, port: number): Promise<MetricsServer> {
  const server = createServer((req, res) => {
    answer(infra, req, res).catch((err: unknown) => {
      infra.logger.error({ err }, 'metrics scrape failed');
      if (!res.headersSent) sendError(res, 500, 'internal_error', 'internal error');
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, infra.config.HOST, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
