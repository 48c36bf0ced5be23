import type Router from '@koa/router';
import type { Context } from 'koa';
import { DomainError } from '../../domain/errors';

/**
 * What a request no route of `router` answered gets: 405 with an `Allow` header when the path is
 * the router's under other methods, else 404.
 */
export function noRouteAnswered(router: Router, ctx: Context): never {
  const allowed = [
    ...new Set(router.match(ctx.path, ctx.method).path.flatMap((layer) => layer.methods)),
  ].sort();
  if (allowed.length === 0) throw new DomainError('not_found', `no route ${ctx.method} ${ctx.path}`);
  ctx.set('Allow', allowed.join(', '));
  throw new DomainError(
    'method_not_allowed',
    `${ctx.method} is not allowed on ${ctx.path}; use ${allowed.join(', ')}`,
  );
}
