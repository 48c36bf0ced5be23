import type { Middleware } from 'koa';
import { DomainError } from '../../domain/errors';
import type { Infra } from '../../infra/container';
import { metricsAccess, refusal } from '../../infra/metrics/metrics-access';
import { allowOnlyReads } from './static-file';

const PATH = '/metrics';

/**
 * `GET /metrics` in Prometheus' text format. A plain middleware rather than a route: it is not a
 * JSON API and stays out of the OpenAPI document. Open on a loopback bind, otherwise only with
 * CP_METRICS_TOKEN as a bearer token (and off without one).
 */
export function metricsRoute(infra: Infra): Middleware {
  const { HOST, CP_METRICS_TOKEN } = infra.config;
  return async (ctx, next) => {
    if (ctx.path !== PATH) return next();
    ctx.state.metricsRoute = PATH;
    const refused = refusal(metricsAccess(HOST, CP_METRICS_TOKEN, ctx.get('Authorization') || undefined));
    if (refused) throw new DomainError(refused.code, refused.message);
    allowOnlyReads(ctx);
    ctx.set('Cache-Control', 'no-store');
    ctx.type = infra.metrics.contentType;
    ctx.body = await infra.metrics.scrape();
  };
}
