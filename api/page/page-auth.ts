import type { Context } from 'koa';
import { DomainError } from '../../domain/errors';
import type { CallContext, Principal } from '../../domain/principal';
import { grants, type Scope } from '../../domain/scopes';
import type { Infra } from '../../infra/container';
import { consumeForCaller } from '../../infra/http/rate-limiters';
import { setRateHeaders } from '../http/rate-headers';
import type { CsrfTokens } from './csrf-tokens';
import { sessionCookie } from './session-cookie';

export const CSRF_HEADER = 'X-CSRF-Token';

/** The cookie's session token: 401 `missing_credentials` without one (the page then shows sign-in). */
export function requireSessionToken(ctx: Context): string {
  const token = sessionCookie(ctx);
  if (!token)
    throw new DomainError('missing_credentials', 'sign in at /approvals: no session cookie was sent');
  return token;
}

/**
 * The cookie holds a dashboard session (css_), never an API key. Unknown tokens count toward the
 * address's failed-authentication limit exactly as a bad bearer token does.
 */
export async function authenticateSession(infra: Infra, token: string, ip: string): Promise<Principal> {
  if (!token.startsWith('css_'))
    throw new DomainError('invalid_api_key', 'the session cookie does not hold a dashboard session');
  const principal = await infra.authenticator.authenticate(token, ip);
  if (principal.kind !== 'user')
    throw new DomainError('invalid_api_key', 'the session cookie does not hold a dashboard session');
  return principal;
}

const JSON_TYPE = /^application\/([\w.+-]+\+)?json$/i;

/**
 * Besides SameSite=Strict: a state-changing request carries the session's CSRF token in a header
 * and a JSON content type, neither of which another site's page can send without a CORS preflight
 * this server never grants. 403 `csrf_failed` or 415 `unsupported_media_type` otherwise.
 */
export function refuseForgery(ctx: Context, token: string, csrf: CsrfTokens): void {
  const presented = ctx.get(CSRF_HEADER);
  if (!presented)
    throw new DomainError('csrf_failed', `send the ${CSRF_HEADER} header the sign-in answered with`);
  if (!csrf.verify(token, presented))
    throw new DomainError('csrf_failed', `the ${CSRF_HEADER} header does not belong to this session`);
  requireJsonType(ctx);
}

/** 415 unless the request says it is JSON (a cross-site form cannot, without a preflight). */
export function requireJsonType(ctx: Context): void {
  if (!JSON_TYPE.test(ctx.request.type))
    throw new DomainError('unsupported_media_type', 'send the request with Content-Type: application/json');
}

/** 403 naming the scope, as the API answers. */
export function requireScope(principal: Principal, scope: Scope): void {
  if (!grants(principal.scopes, scope))
    throw new DomainError('insufficient_scope', `this requires the scope ${scope}`, {
      required_scope: scope,
    });
}

/** The person's requests here share the budgets of their API calls: their own and their org's. */
export async function limitRate(ctx: Context, infra: Infra, principal: Principal): Promise<void> {
  setRateHeaders(ctx, await consumeForCaller(infra.rateLimits, principal));
}

export const callContextOf = (ctx: Context, principal: Principal): CallContext => ({
  principal,
  requestId: ctx.state.requestId as string,
});
