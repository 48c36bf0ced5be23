import type { Context } from 'koa';
import { DomainError } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import { grants, type Scope } from '../../domain/scopes';
import { bearerToken } from '../../infra/auth/presented-secret';
import type { Infra } from '../../infra/container';
import type { Access } from './route';

function presentedKey(ctx: Context): string {
  const header = ctx.get('Authorization');
  if (!header) throw new DomainError('missing_credentials', 'send Authorization: Bearer <API key>');
  const token = bearerToken(header);
  if (!token) throw new DomainError('invalid_api_key', 'the Authorization header must be "Bearer <API key>"');
  return token;
}

/** 403 naming the scope the route requires (or, for a route that takes any of several, all of them). */
function insufficientScope([first, ...others]: [Scope, ...Scope[]]): DomainError {
  if (others.length === 0)
    return new DomainError('insufficient_scope', `this route requires the scope ${first}`, {
      required_scope: first,
    });
  const all = [first, ...others];
  return new DomainError('insufficient_scope', `this route requires one of the scopes ${all.join(', ')}`, {
    required_scope: first,
    accepted_scopes: all,
  });
}

/**
 * Authenticates the caller of a route that is not public: 401 without a valid token, 429 from an
 * address past its budget of failed tokens (see TokenAuthenticator). Null on public routes.
 */
export async function authenticate(ctx: Context, access: Access, infra: Infra): Promise<Principal | null> {
  if (access.kind === 'public') return null;
  // Failed tokens are counted per client address (X-Forwarded-For's when CP_TRUST_PROXY is on).
  return infra.authenticator.authenticate(presentedKey(ctx), ctx.ip);
}

/** 403 when the principal lacks the route's scope; a key that passes is marked used. */
export function requireScope(principal: Principal | null, access: Access, infra: Infra): void {
  if (!principal) return;
  if (access.kind === 'scope' && !access.scopes.some((s) => grants(principal.scopes, s)))
    throw insufficientScope(access.scopes);
  if (principal.kind === 'api_key') infra.keyUsage.touch(principal.id);
}

const NOT_AUTHENTICATED: ReadonlySet<string> = new Set([
  'missing_credentials',
  'invalid_api_key',
  'expired_api_key',
  'rate_limited',
]);

/**
 * The principal of a request no route answered, when it sent a token that authenticates; null
 * otherwise (no token, a token that fails, or an address past its budget of failed tokens), for
 * such a request keeps the answer it would have without one. Failures are counted as on routes.
 */
export async function authenticatedIfAny(ctx: Context, infra: Infra): Promise<Principal | null> {
  if (!ctx.get('Authorization')) return null;
  try {
    return await infra.authenticator.authenticate(presentedKey(ctx), ctx.ip);
  } catch (err) {
    if (err instanceof DomainError && NOT_AUTHENTICATED.has(err.code)) return null;
    throw err;
  }
}
