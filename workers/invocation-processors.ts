import { decideAtSubmit, type FreshInvoke } from '../domain/invocations/decide-at-submit';
import {
  decideInvocation,
  evaluateInvocation,
  followDecision,
  type Decided,
  type PriorVerdict,
  type StageJob,
} from '../domain/invocations/evaluate-invocation';
import type { DecisionWrite } from '../domain/invocations/invocation-store';
import { shareWaitMs, type OrgShares } from '../domain/invocations/org-shares';
import { reapInvocations } from '../domain/invocations/reap-invocations';
import { runInvocation, type Admitted } from '../domain/invocations/run-invocation';
import type { StageQueue } from '../domain/invocations/signals';
import { submitJobId, type InvocationJob } from '../domain/jobs';
import { expireSessions } from '../domain/sessions/session-use-cases';
import { OrgAtCapacity } from '../domain/org-at-capacity';
import type { Infra } from '../infra/container';
import { inSpan } from '../infra/telemetry';

/** What a processor knows of the BullMQ job running it. */
export interface JobInfo {
  /** The BullMQ job id (the submit's job has an id of its own: submitJobId). */
  id: string;
  /** Attempts that already failed (0 on the first run). */
  attemptsMade: number;
  attempts: number;
  /** Times the job was taken before this run without failing (put back to wait its turn). */
  deferrals: number;
  /** When the job was added (ms since the epoch, by the adding process's clock). */
  queuedAt: number;
}

const stageJob = (
  payload: Pick<InvocationJob, 'invocation_id' | 'org_id'>,
  trace: Record<string, string>,
): StageJob => ({
  invocationId: payload.invocation_id,
  orgId: payload.org_id,
  trace,
});

const guardianDeps = (infra: Infra) => ({
  store: infra.invocations,
  queue: infra.queues.stages,
  signal: infra.signal,
  guardian: infra.guardian,
  timers: infra.queues.approvalTimers,
  clock: infra.clock,
});

/** The guardian stage, in a span under the request's trace; the invoke stage continues that trace. */
const inGuardianSpan = <T>(payload: InvocationJob, stage: (job: StageJob) => Promise<T>) =>
  inSpan('invocation.evaluate', 'consumer', payload.trace, (span) => stage(stageJob(payload, span.carrier)), {
    'invocation.id': payload.invocation_id,
  });

/** The `guardian` queue's job (the reaper's requeues): decide, then enqueue an admitted invocation. */
export const evaluateProcessor = (payload: InvocationJob, infra: Infra) =>
  inGuardianSpan(payload, (job) => evaluateInvocation(guardianDeps(infra), job));

/**
 * After the submit's job decided: the invocation to run in this job, one it admitted (now or in
 * an earlier attempt), with the row as its decision left it. One an approval resumed goes to the
 * queue under the invocation's own job id, where the approval's job already is: that enqueue is
 * then one job, and two runs never go side by side.
 */
export async function runHere(
  decided: Decided,
  queue: StageQueue,
): Promise<{ job: InvocationJob; admitted: Admitted } | null> {
  if (decided.outcome !== 'admitted') return null;
  if (decided.run)
    return { job: decided.next, admitted: { view: decided.run, decidedNow: decided.decidedNow } };
  await queue.enqueue('invocation.run', decided.next);
  return null;
}

/**
 * The invoke job: one queue hop per invocation. In the submit's job, a queued invocation is
 * decided first by the guardian stage (the same code the guardian queue runs), and one it admits
 * runs at once (runHere). An invoke job an approval, the reaper or a guardian job enqueued runs
 * an invocation that is running. Its span is the parent of the provider call's.
 *
 * An invoke job that finds its invocation still undecided is a submit's job too: one an API from
 * before the submit's job had an id of its own enqueued under the invocation's id (a rolling
 * upgrade). Nothing else puts an undecided invocation on this queue, so it is decided here rather
 * than left to the reaper.
 */
export const runProcessor = (payload: InvocationJob, infra: Infra, job: JobInfo, prior?: PriorVerdict) =>
  inOrgShare(infra.invokeShares, payload.org_id, job, async () => {
    if (job.id === submitJobId(payload.invocation_id)) return submitStages(payload, infra, job, prior);
    const outcome = await runStage(payload, infra, job);
    return outcome === 'undecided' ? submitStages(payload, infra, job) : outcome;
  });

/**
 * Runs the job in one of its org's slots in this worker, or puts it back to wait (OrgAtCapacity:
 * not an attempt) while the org runs its share here. It waits queued, holding nothing: not the
 * worker's slot, nor a reservation, nor a decision.
 */
async function inOrgShare<T>(shares: OrgShares, orgId: string, job: JobInfo, run: () => Promise<T>) {
  if (!shares.take(orgId))
    throw new OrgAtCapacity(
      shareWaitMs(job.deferrals),
      () => Promise.resolve(shares.hasRoom(orgId)),
      `its share of this worker's invoke slots (${shares.cap}) in use`,
    );
  try {
    return await run();
  } finally {
    shares.release(orgId);
  }
}

/**
 * The submit's job: the guardian stage, then the run of what it admitted, in this job. `prior`: a
 * verdict the API reached before it recorded the invocation (decide-at-submit.ts).
 */
async function submitStages(payload: InvocationJob, infra: Infra, job: JobInfo, prior?: PriorVerdict) {
  const decided = await inGuardianSpan(payload, (stage) =>
    decideInvocation(guardianDeps(infra), stage, prior),
  );
  const here = await runHere(decided, infra.queues.stages);
  if (!here) return decided.outcome;
  const outcome = await runStage(here.job, infra, job, here.admitted);
  infra.logger.debug(
    { invocation_id: payload.invocation_id, outcome, attempt: job.attemptsMade + 1 },
    'invocation run',
  );
  return outcome;
}

/**
 * An invoke the API runs itself, decided before it is recorded (decide-at-submit.ts), in the
 * guardian stage's span: the decision, and the trace context the run stage continues.
 */
export const decideAtSubmitStage = (fresh: FreshInvoke, infra: Infra) =>
  inSpan(
    'invocation.evaluate',
    'consumer',
    fresh.trace,
    async (span) => ({
      decision: await decideAtSubmit({ guardian: infra.guardian, clock: infra.clock }, fresh.view),
      stage: stageJob({ invocation_id: fresh.invocation.id, org_id: fresh.invocation.orgId }, span.carrier),
    }),
    { 'invocation.id': fresh.invocation.id },
  );

/** What a decision recorded at submit leads to (followDecision), with the guardian stage's deps. */
export const followDecisionAtSubmit = (
  infra: Infra,
  fresh: FreshInvoke,
  write: DecisionWrite,
  stage: StageJob,
) => followDecision(guardianDeps(infra), fresh.view, write, stage);

/** The invoke stage: reserve, call the provider, record and settle (`admitted`: as the guardian stage left it). */
export const runStage = (payload: InvocationJob, infra: Infra, job: JobInfo, admitted?: Admitted) =>
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
          guardian: infra.guardian,
          evaluationTurn: (orgId) => infra.evaluationTime.assertTurn(orgId),
          pieces: infra.completions,
          clock: infra.clock,
          providerTimeoutMs: infra.config.CP_PROVIDER_TIMEOUT_MS,
          warn: (message, fields) => infra.logger.warn(fields, message),
          usageCapped: (provider) => infra.metrics.usageCapped(provider),
        },
        stageJob(payload, span.carrier),
        { number: job.attemptsMade + 1, max: job.attempts },
        admitted,
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
    runningInApi: (invocationId) => infra.runClaims.held(invocationId),
    stuckAfterMs: infra.config.CP_REAP_AFTER_MS,
    // A settle follows its result within milliseconds; a reservation this old was left behind.
    leaseGraceMs: infra.config.CP_REAP_AFTER_MS,
    warn: (message, fields) => infra.logger.warn(fields, message),
  });

export const expireProcessor = (infra: Infra) =>
  expireSessions({ sessions: infra.sessions, clock: infra.clock });
