import type { ApprovalDeps } from '../../domain/approvals/approval-use-cases';
import type { Infra } from '../container';

/** What resolving an approval needs, for the API's votes and the workers' expiries alike. */
export const approvalDeps = (infra: Infra): ApprovalDeps => ({
  approvals: infra.approvals,
  invocations: infra.invocations,
  queue: infra.queues.stages,
  signal: infra.signal,
  clock: infra.clock,
});
