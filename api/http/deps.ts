import type { IdentityDeps } from '../../domain/auth/identity-deps';
import type { KeyDeps } from '../../domain/keys/key-use-cases';
import type { Infra } from '../../infra/container';

export const identityDeps = (infra: Infra): IdentityDeps => ({
  uow: infra.uow,
  clock: infra.clock,
  authCache: infra.authenticator,
  sessionTtlSeconds: infra.config.CP_SESSION_TTL_SECONDS,
});

export const keyDeps = (infra: Infra): KeyDeps => ({
  uow: infra.uow,
  clock: infra.clock,
  authCache: infra.authenticator,
});
