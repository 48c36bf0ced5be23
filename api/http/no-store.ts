import type { Middleware } from 'koa';

/**
 * The API's answers are not to be kept by a cache or a browser: some carry secrets once (a new
 * key, a webhook's signing secret, a session token) and all carry an org's data (QA). A route
 * that means otherwise sets its own. The router takes `/V1/...` too (QA: a key minted there went
 * out without it).
 */
export const noStore = (): Middleware => async (ctx, next) => {
  if (/^\/v1(\/|$)/i.test(ctx.path)) ctx.set('Cache-Control', 'no-store');
  await next();
};
