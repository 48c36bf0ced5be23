import { evaluateInvocation, type StageJob } from '../domain/invocations/evaluate-invocation';
import { reapInvocations } from '../domain/invocations/reap-invocations';
import { runInvocation } from '../domain/invocations/run-invocation';
import type { RunView } from '../domain/invocations/invocation-store';
import type { StageQueue } from '../domain/invocations/signals';
import { submitJobId, type InvocationJob } from '../domain/jobs';
import { expireSessions } from '../domain/sessions/session-use-cases';
import type { Infra } from '../infra/container';
import { inSpan } from '../infra/telemetry';

/** What a processor knows of the BullMQ job running it. */
export interface JobInfo {
  /** The BullMQ job id (the submit's job has an id of its own: submitJobId). */
  id: string;
  /** Attempts that already failed (0 on the first run). */
  attemptsMade: number;
  attempts: number;
}

const stageJob = (payload: InvocationJob, trace: Record<string, string>): StageJob => ({
  invocationId: payload.invocation_id,
  orgId: payload.org_id,
  trace,
});

/**
 * The guardian stage, in a span under the request's trace; the invoke stage continues that trace.
 * `queue` is where an admitted invocation is handed on (see handOverHere).
 */
export const evaluateProcessor = (payload: InvocationJob, infra: Infra, queue = infra.queues.stages) =>
  inSpan(
    'invocation.evaluate',
    'consumer',
    payload.trace,
    (span) =>
      evaluateInvocation(
        {
          store: infra.invocations,
          queue,
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

type HandOver = { job: InvocationJob; loaded: RunView };

/**
 * Inside the submit's job, handing over to the invoke stage with the row (an invocation this job
 * admitted, now or in an earlier attempt) means running it next, in this job: the queue records
 * the hand-over instead of enqueueing it. One without the row (an invocation an approval resumed)
 * goes through the queue under the invocation's own job id, so it never runs beside the job the
 * approval enqueued: that enqueue is then one job.
 */
export function handOverHere(queue: StageQueue): { queue: StageQueue; handedOver(): HandOver | null } {
  let next: HandOver | null = null;
  const here: StageQueue = {
    ...queue,
    enqueue: async (stage, job, loaded) => {
      if (stage === 'invocation.run' && loaded) next = { job, loaded };
      else await queue.enqueue(stage, job, loaded);
    },
  };
  return { queue: here, handedOver: () => next };
}

/**
 * The invoke job: one queue hop per invocation. In the submit's job, a queued invocation is
 * decided first by the guardian stage (the same code the guardian queue runs), and one it admits
 * runs at once (handOverHere). An invoke job an approval, the reaper or a guardian job enqueued
 * runs an invocation that is running. Its span is the parent of the provider call's.
 */
export const runProcessor = async (payload: InvocationJob, infra: Infra, job: JobInfo) => {
  if (job.id !== submitJobId(payload.invocation_id)) return runStage(payload, infra, job);
  const stage = handOverHere(infra.queues.stages);
  const decided = await evaluateProcessor(payload, infra, stage.queue);
  const next = stage.handedOver();
  if (!next) return decided;
  const outcome = await runStage(next.job, infra, job, next.loaded);
  infra.logger.debug(
    { invocation_id: payload.invocation_id, outcome, attempt: job.attemptsMade + 1 },
    'invocation run',
  );
  return outcome;
};

const runStage = (payload: InvocationJob, infra: Infra, job: JobInfo, loaded?: RunView) =>
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
        loaded,
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
