import type { Middleware } from 'koa';

/**
 * The API's answers are not to be kept by a cache or a browser: some carry secrets once (a new
 * key, a webhook's signing secret, a session token) and all carry an org's data (QA). A route
 * that means otherwise sets its own (a stream's `no-cache`).
 */
export const noStore = (): Middleware => async (ctx, next) => {
  if (ctx.path.startsWith('/v1/')) ctx.set('Cache-Control', 'no-store');
  await next();
};
