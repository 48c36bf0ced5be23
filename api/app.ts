import Koa from 'koa';
import type { Infra } from '../infra/container';
import { accessLog } from './http/access-log';
import { errorHandler } from './http/error-handler';
import { httpMetrics } from './http/metrics';
import { metricsRoute } from './http/metrics-route';
import { mountRoutes } from './http/mount-routes';
import { noRouteFallback } from './http/no-route';
import { noStore } from './http/no-store';
import { approvalsPage } from './page/approvals-page';
import { queueDashboard } from './admin/queue-dashboard';
import { docsPage } from './docs/docs-page';
import { serviceIndex } from './docs/service-index';
import { requestId } from './http/request-id';
import { tracing } from './http/tracing';
import { ROUTES } from './routes';
import type { ReplyCheck } from './http/route';

export interface AppOptions {
  /** Sees every route's reply before it is written (the test app's conformance check). */
  checkReply?: ReplyCheck;
}

export function createApp(infra: Infra, options: AppOptions = {}): Koa {
  const app = new Koa({ proxy: infra.config.CP_TRUST_PROXY });
  const router = mountRoutes(ROUTES, infra, options.checkReply);
  app.use(requestId());
  app.use(httpMetrics(infra.metrics));
  app.use(accessLog(infra.logger));
  app.use(tracing());
  app.use(errorHandler(infra.logger));
  app.use(noStore());
  app.use(metricsRoute(infra));
  app.use(router.routes());
  app.use(approvalsPage(infra));
  app.use(docsPage());
  app.use(serviceIndex());
  app.use(queueDashboard(infra));
  // Reached only when no route answered: 405 for a known path, 404 otherwise.
  app.use(noRouteFallback(router, ROUTES, infra));
  app.on('error', () => undefined); // every error is answered and logged by errorHandler
  return app;
}
