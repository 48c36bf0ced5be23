import type { Context } from 'koa';
import { DomainError } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import { grants } from '../../domain/scopes';
import type { Infra } from '../../infra/container';
import type { Access } from './route';

function bearerToken(ctx: Context): string {
  const header = ctx.get('Authorization');
  if (!header) throw new DomainError('missing_credentials', 'send Authorization: Bearer <API key>');
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match?.[1])
    throw new DomainError('invalid_api_key', 'the Authorization header must be "Bearer <API key>"');
  return match[1];
}

/** Authenticates the caller and checks the route's scope: 401 without a valid token, 403 without the scope. */
export async function authorize(ctx: Context, access: Access, infra: Infra): Promise<Principal | null> {
  if (access.kind === 'public') return null;
  const principal = await infra.authenticator.authenticate(bearerToken(ctx));
  if (access.kind === 'scope' && !grants(principal.scopes, access.scope)) {
    throw new DomainError('insufficient_scope', `this route requires the scope ${access.scope}`, {
      required_scope: access.scope,
    });
  }
  if (access.kind === 'anyScope' && !access.scopes.some((s) => grants(principal.scopes, s))) {
    throw new DomainError(
      'insufficient_scope',
      `this route requires one of the scopes ${access.scopes.join(', ')}`,
      {
        required_scope: access.scopes[0],
        accepted_scopes: access.scopes,
      },
    );
  }
  if (principal.kind === 'api_key') infra.keyUsage.touch(principal.id);
  return principal;
}
