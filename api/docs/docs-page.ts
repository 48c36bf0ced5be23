import type { Middleware } from 'koa';
import { DomainError } from '../../domain/errors';
import { setDocsHeaders } from './docs-headers';
import { loadDocsFiles } from './docs-files';
import { sendFile } from '../http/static-file';

const isDocsPath = (path: string): boolean => path === '/docs' || path.startsWith('/docs/');

/** GET /docs: the API reference, rendered in the browser from GET /v1/openapi.json. */
export function docsPage(): Middleware {
  const files = loadDocsFiles();
  return async (ctx, next) => {
    if (!isDocsPath(ctx.path)) return next();
    ctx.state.metricsRoute = '/docs';
    setDocsHeaders(ctx);
    const file = files.get(ctx.path);
    if (!file) throw new DomainError('not_found', `no route ${ctx.method} ${ctx.path}`);
    sendFile(ctx, file);
  };
}
