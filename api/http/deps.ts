import type { IdentityDeps } from '../../domain/auth/identity-deps';
import type { AgentDeps } from '../../domain/agents/agent-use-cases';
import type { CredentialDeps } from '../../domain/credentials/credential-use-cases';
import type { KeyDeps } from '../../domain/keys/key-use-cases';
import type { PriceDeps } from '../../domain/pricing/price-use-cases';
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

export const credentialDeps = (infra: Infra): CredentialDeps => ({
  uow: infra.uow,
  clock: infra.clock,
  sealer: infra.credentialSealer,
  allowPrivateProviderHosts: infra.config.CP_ALLOW_PRIVATE_PROVIDER_HOSTS,
});

export const agentDeps = (infra: Infra): AgentDeps => ({ uow: infra.uow, clock: infra.clock });

export const priceDeps = (infra: Infra): PriceDeps => ({ uow: infra.uow, clock: infra.clock });
