import type { Context } from 'koa';
import { setSecurityHeaders } from '../page/page-headers';

/**
 * As the approver's page: this origin's own script, style, images and API only. `data:` images are
 * Swagger UI's icons, inlined in its stylesheet. Swagger UI needs no 'unsafe-inline' style: it sets
 * styles through the DOM, which CSP allows (test/browser/docs-page.test.ts watches for violations).
 */
export const DOCS_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/** On every response under /docs and on GET /, errors included. */
export const setDocsHeaders = (ctx: Context): void => setSecurityHeaders(ctx, DOCS_CONTENT_SECURITY_POLICY);
