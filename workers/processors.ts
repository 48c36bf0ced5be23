import type { JobName, JobPayload } from '../domain/jobs';
import type { Infra } from '../infra/container';

export type Processor<N extends JobName> = (payload: JobPayload<N>, infra: Infra) => Promise<unknown>;

/** One processor per job name; the type makes a missing or extra one a compile error. */
export const PROCESSORS: { [N in JobName]: Processor<N> } = {
  'audit.seal': async (_payload, infra) => ({ sealed: await infra.auditLog.sealAll() }),
  'keys.flush-last-used': async (_payload, infra) => ({ flushed: await infra.keyUsage.flush() }),
  'idempotency.delete-expired': async (_payload, infra) => ({
    deleted: await infra.idempotency.deleteExpired(),
  }),
};
