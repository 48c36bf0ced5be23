import { expireIfOverdue, resolve } from '../../domain/approvals/approval-use-cases';
import type { StrandedScope } from '../../domain/approvals/approval-store';
import { withdrawStranded } from '../../domain/approvals/withdraw-stranded';
import type { Actor } from '../../domain/audit/audit-event';
import { approvalDeps } from '../../infra/approvals/approval-deps';
import type { IdentityDeps } from '../../domain/auth/identity-deps';
import type { AgentDeps } from '../../domain/agents/agent-use-cases';
import type { CredentialDeps } from '../../domain/credentials/credential-use-cases';
import type { KeyDeps } from '../../domain/keys/key-use-cases';
import type { PriceDeps } from '../../domain/pricing/price-use-cases';
import type { ReadDeps } from '../../domain/invocations/read-invocations';
import type { CancelDeps } from '../../domain/invocations/cancel-invocation';
import type { InvokeDeps } from '../../domain/invocations/submit-invocation';
import { usdToMicros } from '../../domain/pricing/cost';
import type { SessionDeps } from '../../domain/sessions/session-use-cases';
import type { Infra } from '../../infra/container';

export const identityDeps = (infra: Infra): IdentityDeps => ({
  uow: infra.uow,
  clock: infra.clock,
  authCache: infra.authenticator,
  sessionTtlSeconds: infra.config.CP_SESSION_TTL_SECONDS,
});

/**
 * After a session's close, a key's revocation or a credential's deletion: what waits on an
 * approval under it can no longer run. Its approvals are withdrawn at once; if that fails, the
 * change stands (it is committed) and the approvals sweep withdraws them within seconds.
 */
const withdrawApprovals =
  (infra: Infra) =>
  async (scope: StrandedScope, by: Actor, requestId: string | null): Promise<void> => {
    try {
      await withdrawStranded(approvalDeps(infra), by, requestId, scope);
    } catch (err) {
      infra.logger.warn({ err, ...scope }, 'withdrawing approvals failed; the approvals sweep retries');
    }
  };

export const keyDeps = (infra: Infra): KeyDeps => ({
  uow: infra.uow,
  clock: infra.clock,
  authCache: infra.authenticator,
  withdrawApprovals: withdrawApprovals(infra),
});

export const credentialDeps = (infra: Infra): CredentialDeps => ({
  uow: infra.uow,
  clock: infra.clock,
  sealer: infra.credentialSealer,
  allowPrivateProviderHosts: infra.config.CP_ALLOW_PRIVATE_PROVIDER_HOSTS,
  withdrawApprovals: withdrawApprovals(infra),
});

export const agentDeps = (infra: Infra): AgentDeps => ({ uow: infra.uow, clock: infra.clock });

export const priceDeps = (infra: Infra): PriceDeps => ({ uow: infra.uow, clock: infra.clock });

export const sessionDeps = (infra: Infra): SessionDeps => ({
  sessions: infra.sessions,
  invocations: infra.invocations,
  ledger: infra.ledger,
  uow: infra.uow,
  clock: infra.clock,
  maxSessionCostMicros: usdToMicros(infra.config.CP_MAX_SESSION_COST_USD),
  withdrawApprovals: withdrawApprovals(infra),
});

export const invokeDeps = (infra: Infra): InvokeDeps => ({
  store: infra.invocations,
  queue: infra.queues.stages,
  syncRuns: infra.syncRuns,
  waiter: infra.completions,
  ledger: infra.ledger,
  clock: infra.clock,
  maxMessages: infra.config.CP_MAX_MESSAGES,
  warn: (message, fields) => infra.logger.warn(fields, message),
});

export const cancelDeps = (infra: Infra): CancelDeps => ({
  store: infra.invocations,
  signal: infra.signal,
  clock: infra.clock,
  cancelApproval: async (orgId, approvalId, by, requestId) => {
    const done = await resolve(approvalDeps(infra), orgId, approvalId, { kind: 'cancel', by, requestId });
    return done?.result === 'resolved';
  },
});

export const readDeps = (infra: Infra): ReadDeps => ({
  store: infra.invocations,
  waiter: infra.completions,
  expireOverdue: (orgId, approvalId) => expireIfOverdue(approvalDeps(infra), orgId, approvalId),
});

export { approvalDeps };
