import type Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { DomainError } from '../../domain/errors';
import type { Infra } from '../../infra/container';
import { limitUnrouted } from './mount-routes';
import type { RouteDef } from './route';

/**
 * What a request no route of `router` answered gets: 405 with an `Allow` header when the path is
 * the router's under other methods, else 404. A path that is a route's literal path allows that
 * path's methods only, not those of a parameter route it would also match.
 */
export function noRouteAnswered(router: Router, ctx: Context): never {
  const layers = router.match(ctx.path, ctx.method).path;
  // A literal path is its own resource, not a value of a sibling's parameter (see mountRoutes).
  const literal = layers.filter((layer) => layer.path === ctx.path);
  const allowed = [
    ...new Set((literal.length > 0 ? literal : layers).flatMap((layer) => layer.methods)),
  ].sort();
  if (allowed.length === 0) throw new DomainError('not_found', `no route ${ctx.method} ${ctx.path}`);
  ctx.set('Allow', allowed.join(', '));
  throw new DomainError(
    'method_not_allowed',
    `${ctx.method} is not allowed on ${ctx.path}; use ${allowed.join(', ')}`,
  );
}

/** Where a route's family of paths starts: its path up to the first parameter. */
const baseOf = (path: string): string => path.split('/{')[0] ?? path;

/**
 * The app's last middleware: what no route answered, in the error shape of the routes whose
 * paths it falls under, so an OpenAI SDK reads a 404 or 405 under /v1/chat/completions or
 * /v1/models (its `retrieve` of a path this service lacks, a wrong method) as it reads the rest.
 */
export function noRouteFallback(router: Router, routes: RouteDef[], infra: Infra): Middleware {
  const openAiBases = routes.filter((r) => r.errorShape === 'openai').map((r) => baseOf(r.path));
  const isOpenAiPath = (path: string) =>
    openAiBases.some((base) => path === base || path.startsWith(`${base}/`));
  return async (ctx) => {
    if (isOpenAiPath(ctx.path)) ctx.state.errorShape = 'openai';
    await limitUnrouted(infra, ctx);
    noRouteAnswered(router, ctx);
  };
}
