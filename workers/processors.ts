import type { JobName, JobPayload } from '../domain/jobs';
import type { Infra } from '../infra/container';
import { expireApproval, sweepApprovals } from './approval-processors';
import { evaluationProcessor } from './evaluation-processor';
import {
  evaluateProcessor,
  expireProcessor,
  reapProcessor,
  runProcessor,
  type JobInfo,
} from './invocation-processors';
import {
  feedWebhooksAfterSeal,
  pruneWebhookDeliveries,
  sweepWebhooks,
  webhookProcessor,
} from './webhook-processor';

export type Processor<N extends JobName> = (
  payload: JobPayload<N>,
  infra: Infra,
  job: JobInfo,
) => Promise<unknown>;

/** One processor per job name; the type makes a missing or extra one a compile error. */
export const PROCESSORS: { [N in JobName]: Processor<N> } = {
  'invocation.evaluate': (payload, infra) => evaluateProcessor(payload, infra),
  'acs.evaluate': (payload, infra) => evaluationProcessor(payload, infra),
  'invocation.run': (payload, infra, job) => runProcessor(payload, infra, job),
  'approval.expire': (payload, infra) => expireApproval(payload, infra),
  'approvals.sweep': async (_payload, infra) => sweepApprovals(infra),
  'webhook.deliver': (payload, infra, job) => webhookProcessor(payload, infra, job),
  'webhooks.sweep': async (_payload, infra) => ({ requeued: await sweepWebhooks(infra) }),
  'webhooks.prune': async (_payload, infra) => ({ deleted: await pruneWebhookDeliveries(infra) }),
  'invocations.reap': async (_payload, infra) => reapProcessor(infra),
  'sessions.expire': async (_payload, infra) => ({ expired: await expireProcessor(infra) }),
  'audit.seal': (_payload, infra) => feedWebhooksAfterSeal(infra, infra.auditLog.sealAll()),
  'keys.flush-last-used': async (_payload, infra) => ({ flushed: await infra.keyUsage.flush() }),
  'idempotency.delete-expired': async (_payload, infra) => ({
    deleted: await infra.idempotency.deleteExpired(),
  }),
};
