import { readFileSync } from 'node:fs';
import type { Context } from 'koa';
import { DomainError } from '../../domain/errors';

/** A file read once at start and served as is: nothing from a request is ever spliced in. */
export interface StaticFile {
  body: Buffer;
  type: string;
  cacheControl: string;
}

export const readStaticFile = (path: string, type: string, cacheControl = 'no-cache'): StaticFile => ({
  body: readFileSync(path),
  type,
  cacheControl,
});

/** Pages and /metrics only answer reads: anything else is 405 with the methods they do answer. */
export function allowOnlyReads(ctx: Context): void {
  if (ctx.method === 'GET' || ctx.method === 'HEAD') return;
  ctx.set('Allow', 'GET, HEAD');
  throw new DomainError('method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}; use GET, HEAD`);
}

export function sendFile(ctx: Context, file: StaticFile): void {
  allowOnlyReads(ctx);
  ctx.set('Cache-Control', file.cacheControl);
  ctx.type = file.type;
  ctx.body = file.body;
}
