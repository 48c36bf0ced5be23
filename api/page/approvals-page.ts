import type { Middleware } from 'koa';
import { noRouteAnswered } from '../http/no-route';
import type { Infra } from '../../infra/container';
import { setPageHeaders } from './page-headers';
import { pageRouter } from './page-routes';

const isPagePath = (path: string): boolean => path === '/approvals' || path.startsWith('/approvals/');

/**
 * The approver's page under /approvals: every response there (errors and unknown paths included)
 * carries the page's security headers. Other paths pass through untouched.
 */
export function approvalsPage(infra: Infra): Middleware {
  const router = pageRouter(infra);
  // The router's middleware adds ctx.params itself; as plain Koa middleware it is called before that.
  const routes = router.routes() as unknown as Middleware;
  return async (ctx, next) => {
    if (!isPagePath(ctx.path)) return next();
    ctx.state.metricsRoute = '/approvals';
    setPageHeaders(ctx);
    await routes(ctx, async () => noRouteAnswered(router, ctx));
  };
}
