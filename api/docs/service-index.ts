import type { Middleware } from 'koa';
import { setDocsHeaders } from './docs-headers';
import { loadIndexPage } from './docs-files';
import { allowOnlyReads, sendFile } from '../http/static-file';

const V1 = { api_version: 'v1', openapi: '/v1/openapi.json', docs: '/docs' };

const LINKS = {
  service: 'control-plane',
  ...V1,
  approvals: '/approvals',
  health: '/health',
};

/** GET / (a page, or JSON for a client that prefers it) and GET /v1: where to start reading. */
export function serviceIndex(): Middleware {
  const page = loadIndexPage();
  return async (ctx, next) => {
    if (ctx.path === '/v1') {
      ctx.state.metricsRoute = '/v1';
      allowOnlyReads(ctx);
      ctx.set('Cache-Control', 'no-cache');
      ctx.body = V1;
      return;
    }
    if (ctx.path !== '/') return next();
    ctx.state.metricsRoute = '/';
    setDocsHeaders(ctx);
    ctx.vary('Accept');
    if (ctx.accepts('html', 'json') !== 'json') return sendFile(ctx, page);
    allowOnlyReads(ctx);
    ctx.set('Cache-Control', 'no-cache');
    ctx.body = LINKS;
  };
}
