import Router from '@koa/router';
import type { Context, Next } from 'koa';
import { z } from 'zod';
import type { Principal } from '../../domain/principal';
import type { Infra } from '../../infra/container';
import { consumeForCaller } from '../../infra/http/rate-limiters';
import { authenticate, authenticatedIfAny, requireScope } from './authenticate';
import { readJsonBody } from './body-parser';
import { withIdempotency } from './idempotency';
import { setRateHeaders } from './rate-headers';
import type { Reply, ReplyCheck, RouteDef } from './route';
import { parseInput, refuseUnstorable } from './validate';

export const koaPath = (openApiPath: string): string => openApiPath.replace(/\{(\w+)\}/g, ':$1');

/**
 * Public routes are limited per IP; all others per key (or per human session user) and per org,
 * but for the few outside the org's limit (revoking a key).
 */
async function applyRateLimit(
  ctx: Context,
  route: Pick<RouteDef, 'outsideOrgLimit'>,
  infra: Infra,
  principal: Principal | null,
): Promise<void> {
  const rate = !principal
    ? await infra.rateLimits.perIp.consume(ctx.ip)
    : route.outsideOrgLimit
      ? await infra.rateLimits.perKey.consume(principal.id)
      : await consumeForCaller(infra.rateLimits, principal);
  setRateHeaders(ctx, rate);
}

/**
 * The query parameters given a value: `?status=` (an empty form field, say) is as if left out,
 * on every route, rather than a filter on the empty string on some and a 400 on others.
 */
const givenValues = (query: Context['query']) =>
  Object.fromEntries(Object.entries(query).filter(([, value]) => value !== ''));

/**
 * Reads the body and checks what the route reads: first the one rule for unstorable input (path,
 * query, body), then the body schema. The query schema runs in the handler's turn.
 */
async function readInput(
  ctx: Context,
  route: RouteDef,
  infra: Infra,
  principal: Principal | null,
): Promise<{ raw: unknown; body: unknown }> {
  const raw = await readJsonBody(ctx, infra.config.CP_MAX_BODY_BYTES);
  refuseUnstorable({
    path: ctx.params,
    query: route.query ? ctx.query : undefined,
    body: route.body ? raw : undefined,
  });
  if (!route.body) return { raw, body: undefined };
  if (route.prepare) await route.prepare({ raw, principal, infra });
  return { raw, body: parseInput(route.body, raw === undefined && route.bodyOptional ? {} : raw, 'body') };
}

/** Aborts when the connection closes before the whole response was written. */
function hangUpSignal(ctx: Context): AbortSignal {
  const hungUp = new AbortController();
  ctx.res.once('close', () => {
    if (!ctx.res.writableFinished) hungUp.abort();
  });
  return hungUp.signal;
}

/**
 * Each route runs: authenticate -> rate limit -> check scope -> read and validate -> handle. The
 * limit comes before the scope check, so a refused request still counts against its key.
 * `yields(ctx)` passes the request on instead (a literal path under a parameter, see mountRoutes).
 */
function pipeline(
  route: RouteDef,
  infra: Infra,
  checkReply: ReplyCheck | undefined,
  yields: (ctx: Context) => boolean,
) {
  const query = route.query ?? z.unknown();
  return async (ctx: Context, next: Next): Promise<void> => {
    if (yields(ctx)) return next();
    if (route.errorShape) ctx.state.errorShape = route.errorShape;
    const principal = await authenticate(ctx, route.access, infra);
    if (!route.unlimited) await applyRateLimit(ctx, route, infra, principal);
    requireScope(principal, route.access, infra);
    const { raw, body } = await readInput(ctx, route, infra, principal);
    const handle = (created?: (reply: Reply) => Promise<void>) =>
      route.handle({
        body,
        query: parseInput(query, givenValues(ctx.query), 'query'),
        params: ctx.params as Record<string, string>,
        principal,
        requestId: ctx.state.requestId as string,
        ip: ctx.ip,
        header: (name: string) => ctx.get(name),
        trace: (ctx.state.trace as Record<string, string> | undefined) ?? {},
        closed: hangUpSignal(ctx),
        created,
        infra,
      });
    const reply =
      route.idempotent && principal
        ? await withIdempotency(ctx, infra, principal, `${route.method} ${route.path}`, raw, handle)
        : await handle();
    checkReply?.(route, reply);
    ctx.status = reply.status;
    if (reply.body !== undefined) ctx.body = reply.body;
    for (const [name, value] of Object.entries(reply.headers ?? {})) ctx.set(name, value);
  };
}

/**
 * Mounts the routes. A path that is a route's own literal path (`/v1/policies/preview`) is never
 * taken for a parameter of another (`/v1/policies/{id}`): a method the literal path lacks falls
 * through to 405, not to the parameter route. The comparison is exact (the router matches paths
 * case-insensitively; `/v1/policies/PREVIEW` is a policy id, not the preview).
 */
export function mountRoutes(routes: RouteDef[], infra: Infra, checkReply?: ReplyCheck): Router {
  const router = new Router();
  const literalPaths = new Set(routes.filter((r) => !r.path.includes('{')).map((r) => r.path));
  const isLiteralPath = (ctx: Context): boolean => literalPaths.has(ctx.path);
  const never = (): boolean => false;
  for (const route of routes) {
    const yields = route.path.includes('{') ? isLiteralPath : never;
    router.register(koaPath(route.path), [route.method], pipeline(route, infra, checkReply, yields));
  }
  return router;
}

/**
 * A request no route answered (a 404 or 405 follows) still counts against the
 * per-key and per-org limits of a token that authenticates, with the `RateLimit-*` headers, so a key cannot
 * probe without limit. Without such a token nothing is counted, as before.
 */
export async function limitUnrouted(infra: Infra, ctx: Context): Promise<void> {
  const principal = await authenticatedIfAny(ctx, infra);
  if (principal) await applyRateLimit(ctx, { outsideOrgLimit: false }, infra, principal);
}
