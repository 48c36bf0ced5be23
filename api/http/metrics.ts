import type { Context, Middleware } from 'koa';
import type { Metrics } from '../../infra/metrics/metrics';

/**
 * The route a request is counted under: the router's template (`/v1/sessions/:id`), or the fixed
 * path a plain middleware answered and named in `ctx.state.metricsRoute`. Never the raw path,
 * whose ids would make every request a new series.
 */
export function routeLabel(matchedRoute: unknown, namedRoute: unknown): string {
  if (typeof matchedRoute === 'string') return matchedRoute;
  if (typeof namedRoute === 'string') return namedRoute;
  return 'unmatched';
}

const routeOf = (ctx: Context): string =>
  routeLabel((ctx as { _matchedRoute?: unknown })._matchedRoute, ctx.state.metricsRoute);

/**
 * Counts and times every request once its response is finished (or the client hung up), so a
 * streamed answer is timed to its last byte.
 */
export const httpMetrics =
  (metrics: Metrics): Middleware =>
  async (ctx, next) => {
    const started = performance.now();
    ctx.res.once('close', () =>
      metrics.requestFinished(ctx.method, routeOf(ctx), ctx.status, (performance.now() - started) / 1000),
    );
    await next();
  };
