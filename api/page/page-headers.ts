import type { Context } from 'koa';

/**
 * Nothing but this origin's own script, style and API: no inline script or style, no framing, no
 * form posting elsewhere, no <base> rewriting. Text from prompts can never become code.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/** The headers of every page this API serves (errors included), under its own CSP. */
export function setSecurityHeaders(ctx: Context, contentSecurityPolicy: string): void {
  ctx.set('Content-Security-Policy', contentSecurityPolicy);
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.set('X-Frame-Options', 'DENY');
}

/** On every response under /approvals, errors included. */
export const setPageHeaders = (ctx: Context): void => setSecurityHeaders(ctx, CONTENT_SECURITY_POLICY);
