import { evaluateInvocation, type StageJob } from '../domain/invocations/evaluate-invocation';
import { reapInvocations } from '../domain/invocations/reap-invocations';
import { runInvocation } from '../domain/invocations/run-invocation';
import type { InvocationJob } from '../domain/jobs';
import { expireSessions } from '../domain/sessions/session-use-cases';
import type { Infra } from '../infra/container';
import { inSpan } from '../infra/telemetry';

/** What a processor knows of the BullMQ job running it. */
export interface JobInfo {
  /** Attempts that already failed (0 on the first run). */
  attemptsMade: number;
  attempts: number;
}

const stageJob = (payload: InvocationJob, trace: Record<string, string>): StageJob => ({
  invocationId: payload.invocation_id,
  orgId: payload.org_id,
  trace,
});

/** The guardian stage, in a span under the request's trace; the invoke job continues that trace. */
export const evaluateProcessor = (payload: InvocationJob, infra: Infra) =>
  inSpan(
    'invocation.evaluate',
    'consumer',
    payload.trace,
    (span) =>
      evaluateInvocation(
        {
          store: infra.invocations,
          queue: infra.queues.stages,
          signal: infra.signal,
          guardian: infra.guardian,
          timers: infra.queues.approvalTimers,
          webhooks: infra.webhooks,
          clock: infra.clock,
        },
        stageJob(payload, span.carrier),
      ),
    { 'invocation.id': payload.invocation_id },
  );

/** The invoke stage: its span is the parent of the provider call's. */
export const runProcessor = async (payload: InvocationJob, infra: Infra, job: JobInfo) => {
  const outcome = await runStage(payload, infra, job);
  infra.logger.debug(
    { invocation_id: payload.invocation_id, outcome, attempt: job.attemptsMade + 1 },
    'invocation run',
  );
  return outcome;
};

const runStage = (payload: InvocationJob, infra: Infra, job: JobInfo) =>
  inSpan(
    'invocation.run',
    'consumer',
    payload.trace,
    (span) =>
      runInvocation(
        {
          store: infra.invocations,
          ledger: infra.ledger,
          providers: infra.providers,
          sealer: infra.credentialSealer,
          signal: infra.signal,
          pieces: infra.completions,
          clock: infra.clock,
          providerTimeoutMs: infra.config.CP_PROVIDER_TIMEOUT_MS,
          warn: (message, fields) => infra.logger.warn(fields, message),
        },
        stageJob(payload, span.carrier),
        { number: job.attemptsMade + 1, max: job.attempts },
      ),
    { 'invocation.id': payload.invocation_id, 'job.attempt': job.attemptsMade + 1 },
  );

export const reapProcessor = (infra: Infra) =>
  reapInvocations({
    store: infra.invocations,
    queue: infra.queues.stages,
    ledger: infra.ledger,
    signal: infra.signal,
    clock: infra.clock,
    stuckAfterMs: infra.config.CP_REAP_AFTER_MS,
    // A settle follows its result within milliseconds; a reservation this old was left behind.
    leaseGraceMs: infra.config.CP_REAP_AFTER_MS,
  });

export const expireProcessor = (infra: Infra) =>
  expireSessions({ sessions: infra.sessions, clock: infra.clock });
