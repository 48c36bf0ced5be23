import type { FreshInvoke } from '../domain/invocations/decide-at-submit';
import { asDecided, type PriorVerdict, type StageJob } from '../domain/invocations/evaluate-invocation';
import type { DecisionWrite } from '../domain/invocations/invocation-store';
import type { Invocation } from '../domain/invocations/invocation';
import { RetryLater, type Admitted } from '../domain/invocations/run-invocation';
import type { SyncRunner } from '../domain/invocations/signals';
import { submitJobId, type InvocationJob } from '../domain/jobs';
import { OrgAtCapacity } from '../domain/org-at-capacity';
import type { Infra } from '../infra/container';
import { OnceAMinute } from '../infra/logging/once-a-minute';
import {
  decideAtSubmitStage,
  followDecisionAtSubmit,
  runProcessor,
  runStage,
  type JobInfo,
} from './invocation-processors';
import { RunRoom, type RoomTry } from './run-room';
import { providerBackoff } from './start-workers';

/** When a run this process could not finish goes on in the queue, and with what attempts. */
export interface HandOver {
  delayMs: number;
  /** Attempts this run spent (0 or 1): the queue's count and backoff go on from there. */
  attemptsMade: number;
  /** The queue's attempts left for it. */
  attemptsLeft: number;
  /** The run failed unexpectedly (not a provider's retryable error, not its org's turn). */
  fault: boolean;
}

/**
 * As the queue would run the job again: an org past its share waits its turn without spending an
 * attempt; a failed attempt (a provider's retryable error, or a fault) is one spent, and the rest
 * follow after the provider backoff. A job the queue would not run again (its last attempt
 * failed on a fault) still gets one: the reaper would enqueue it anyway, as a job gone.
 */
export function handOverOf(err: unknown, attempts: number, backoffMs: number): HandOver {
  if (err instanceof OrgAtCapacity)
    return { delayMs: err.delayMs, attemptsMade: 0, attemptsLeft: attempts, fault: false };
  const backoff = { opts: { backoff: { type: 'provider', delay: backoffMs } } };
  const delayMs = providerBackoff(1, backoff, err instanceof Error ? err : undefined);
  const fault = !(err instanceof RetryLater);
  return { delayMs, attemptsMade: 1, attemptsLeft: Math.max(1, attempts - 1), fault };
}

/**
 * Sync invokes run in the API process that took them (CP_SYNC_INVOKES_IN_API): the guardian stage
 * and the provider call of the submit's job, in this process, with no queue hop, while it runs
 * fewer than CP_INVOKE_CONCURRENCY of them and the org fewer than its share
 * (CP_INVOKE_ORG_CONCURRENCY, counted with a worker's in the same process). Otherwise, and for
 * invokes whose client does not wait, the queue runs them as before. An invocation not yet
 * recorded is decided here first, and written decided (decideHere, decide-at-submit.ts).
 *
 * What the queue gives a job, this gives a run: a run that cannot finish (a provider's retryable
 * error, its org's turn, a fault) is handed to the queue with the attempts it left; a run cut off
 * by a crash is leased (RunClaims), so the reaper enqueues it once the lease lapses; a shutdown
 * waits for the runs in flight.
 */
export class SyncRuns implements SyncRunner {
  readonly active = true;
  private readonly running = new Map<string, Promise<void>>();
  /** Invocations being decided here (decideHere), not yet running. */
  private readonly deciding = new Set<Promise<unknown>>();
  /** Decisions and runs holding room here: at most `cap` but for a run a decision starts. */
  private held = 0;
  private readonly room: RunRoom;
  private readonly stopListening: () => void;
  private readonly renewal: NodeJS.Timeout;
  private closing = false;
  private readonly leaseFailures = new OnceAMinute();

  constructor(
    private readonly infra: Infra,
    private readonly cap = infra.config.CP_INVOKE_CONCURRENCY,
    renewEveryMs = infra.runClaims.renewEveryMs,
  ) {
    this.room = new RunRoom((orgId) => this.tryTake(orgId), {
      maxWaitMs: infra.config.CP_SYNC_INVOKE_ROOM_WAIT_MS,
      maxWaiting: cap,
      maxWaitingPerOrg: infra.invokeShares.cap,
    });
    // A share a worker in this process released (`npm start`) is room for a waiter too.
    this.stopListening = infra.invokeShares.onRelease(() => this.room.freed());
    this.renewal = setInterval(this.renewLeases, renewEveryMs);
    this.renewal.unref();
    // Back from an outage: renew at once, not up to a renewal later, when the leases are oldest.
    infra.redis.on('ready', this.renewLeases);
  }

  /**
   * Waits for room (RunRoom, at most `waitMs`: its client's wait), then decides here; null when
   * room did not come or this process began to close meanwhile.
   */
  async decideHere(fresh: FreshInvoke, waitMs: number): Promise<Invocation | null> {
    const orgId = fresh.invocation.orgId;
    if (this.closing || !(await this.room.take(orgId, waitMs))) return null;
    if (this.closing) {
      this.infra.invokeShares.release(orgId);
      this.freed();
      return null;
    }
    const deciding = this.decide(fresh);
    this.deciding.add(deciding);
    return deciding.finally(() => {
      this.deciding.delete(deciding);
      this.freed();
    });
  }

  /** Room and its org's share, taken together or not at all. */
  private tryTake(orgId: string): RoomTry {
    if (!this.hasRoom()) return 'full';
    if (!this.infra.invokeShares.take(orgId)) return 'org_full';
    this.held++;
    return 'taken';
  }

  private freed(): void {
    this.held--;
    this.room.freed();
  }

  /** With its org's share taken, which the run (if any) then holds. */
  private async decide(fresh: FreshInvoke): Promise<Invocation | null> {
    const { invocation, requested } = fresh;
    const orgId = invocation.orgId;
    let share: (() => void) | null = () => this.infra.invokeShares.release(orgId);
    try {
      // Its org's turn for evaluation time, a guardian that failed, or an invocation that would not be
      // sent: left to the guardian stage, as any queued invocation is.
      const decided = await decideAtSubmitStage(fresh, this.infra).catch(() => null);
      if (!decided?.decision) return null;
      const job = { invocation_id: invocation.id, org_id: orgId, trace: decided.stage.trace };
      if (decided.decision.kind === 'slow') {
        const prior: PriorVerdict = decided.decision;
        this.lease(invocation.id);
        await this.infra.invocations.insert(invocation, requested);
        // The run takes its org's share itself (runProcessor).
        share();
        share = null;
        this.start(job, () => this.run(job, prior));
        return invocation;
      }
      const { write } = decided.decision;
      const { policyVersion, credential } = fresh.view;
      const insert = {
        invocation,
        requested,
        write,
        policyVersion,
        agentVersion: fresh.agentVersion,
        credentialVersion: credential?.version ?? null,
      };
      // Something it was decided on changed since admission read it: the guardian stage's way.
      if ((await this.infra.invocations.insertDecided(insert)) !== 'applied') return null;
      const next = await this.follow(fresh, write, decided.stage);
      if (next?.outcome === 'admitted' && next.run) {
        const admitted = { view: next.run, decidedNow: true };
        const release = share;
        share = null;
        // Leased with the run's reservation, in one write to Redis (auto-pipelined: the same tick):
        // the reaper looks at an invocation only after CP_REAP_AFTER_MS, and one recorded but cut
        // off before its lease was never sent, so it may be enqueued as one whose job is gone.
        this.lease(next.next.invocation_id);
        this.start(next.next, () => this.runAdmitted(next.next, admitted).finally(release));
      } else this.infra.metrics.syncRun('ran');
      return asDecided(invocation, write);
    } finally {
      share?.();
    }
  }

  /**
   * The decision is recorded, so a failure to set its approval's expiry or to tell the client of a
   * denial does not fail the request: the sweep of overdue approvals backs the expiry up, and a
   * waiting client reads the denial when its wait runs out.
   */
  private async follow(fresh: FreshInvoke, write: DecisionWrite, stage: StageJob) {
    try {
      return await followDecisionAtSubmit(this.infra, fresh, write, stage);
    } catch (err) {
      this.infra.logger.warn(
        { invocation_id: fresh.invocation.id, status: write.status, err },
        'an invoke decided in the API: its approval expiry or denial could not be passed on',
      );
      return null;
    }
  }

  runHere(job: InvocationJob): boolean {
    // Room never stays free while an invoke waits for it (every release hands it on at once), so
    // this takes none from a waiter.
    const room = this.hasRoom() && this.infra.invokeShares.hasRoom(job.org_id);
    if (!room) {
      this.infra.metrics.syncRun('queued');
      return false;
    }
    this.start(job, () => this.run(job));
    this.lease(job.invocation_id);
    return true;
  }

  /** Runs and invocations being decided here, under CP_INVOKE_CONCURRENCY, and not closing. */
  private hasRoom(): boolean {
    return !this.closing && this.held < this.cap;
  }

  private start(job: InvocationJob, run: () => Promise<void>): void {
    const id = job.invocation_id;
    this.held++;
    this.running.set(
      id,
      run().finally(() => {
        this.running.delete(id);
        this.freed();
      }),
    );
  }

  /** Not awaited: the reaper looks at an invocation only after CP_REAP_AFTER_MS without progress. */
  private lease(invocationId: string): void {
    this.infra.runClaims.claim(invocationId).catch((err: unknown) => this.leaseFailed(err));
  }

  /** Runs in flight now. */
  get inFlight(): number {
    return this.running.size;
  }

  /** Invokes waiting for room now. */
  get waitingForRoom(): number {
    return this.room.size;
  }

  /**
   * Takes no new runs from now on, and hands the invokes waiting for room to the queue. A shutdown
   * calls it before the API lets its requests finish: a waiter is a request in flight, and room
   * freeing meanwhile would start its provider call in a process about to exit (QA).
   */
  stopTaking(): void {
    this.closing = true;
    this.room.clear();
  }

  /** Takes no new runs and waits for those in flight (each ends or is handed to the queue). */
  async close(): Promise<void> {
    this.stopTaking();
    if (this.running.size > 0)
      this.infra.logger.info(
        { in_flight: this.running.size },
        'waiting for the invokes this API runs to end',
      );
    // Those being decided may start runs of their own.
    while (this.running.size > 0 || this.deciding.size > 0)
      await Promise.allSettled([...this.running.values(), ...this.deciding]);
    clearInterval(this.renewal);
    this.stopListening();
    this.infra.redis.off('ready', this.renewLeases);
  }

  /** The submit's job, here (`prior`: a verdict reached before the invocation was recorded). */
  private run(job: InvocationJob, prior?: PriorVerdict): Promise<void> {
    return this.attempt(job, (info) => runProcessor(job, this.infra, info, prior));
  }

  /** The invoke stage of an invocation decided here; its org's share is held by the caller. */
  private runAdmitted(job: InvocationJob, admitted: Admitted): Promise<void> {
    return this.attempt(job, (info) => runStage(job, this.infra, info, admitted));
  }

  /** The job's first attempt, as the queue would run it; what it cannot finish is handed over. */
  private async attempt(job: InvocationJob, work: (info: JobInfo) => Promise<unknown>): Promise<void> {
    const attempts = this.infra.config.CP_INVOKE_ATTEMPTS;
    const info: JobInfo = {
      id: submitJobId(job.invocation_id),
      attemptsMade: 0,
      attempts,
      deferrals: 0,
      queuedAt: Date.now(),
    };
    try {
      await work(info);
      this.infra.metrics.syncRun('ran');
    } catch (err) {
      await this.handOver(job, handOverOf(err, attempts, this.infra.config.CP_INVOKE_BACKOFF_MS), err);
    }
  }

  /** A hand-over Redis refuses leaves the invocation to the reaper, as a job gone. */
  private async handOver(job: InvocationJob, later: HandOver, err: unknown): Promise<void> {
    const fields = {
      invocation_id: job.invocation_id,
      delay_ms: later.delayMs,
      attempts_left: later.attemptsLeft,
    };
    if (later.fault) this.infra.logger.warn({ ...fields, err }, 'an invoke run in the API failed; queued');
    else
      this.infra.logger.info(
        { ...fields, error: (err as Error).name },
        'an invoke run in the API goes on in the queue',
      );
    try {
      const made = { ...job, attempts_made: later.attemptsMade };
      await this.infra.queues.handOver(made, later.delayMs, later.attemptsLeft);
      this.infra.metrics.syncRun('handed_over');
    } catch (queueErr) {
      this.infra.logger.warn(
        { invocation_id: job.invocation_id, err: queueErr },
        'could not hand an invoke run in the API to the queue; the reaper enqueues it',
      );
    }
  }

  private readonly renewLeases = (): void => {
    if (this.running.size === 0) return;
    this.infra.runClaims.hold(this.running.keys()).catch((err: unknown) => this.leaseFailed(err));
  };

  /** Once a minute: during a Redis outage every start and renewal fails. */
  private leaseFailed(err: unknown): void {
    const due = this.leaseFailures.due('lease');
    if (!due.log) return;
    const left = due.skipped > 0 ? { failures_not_logged: due.skipped } : {};
    this.infra.logger.warn(
      { err, ...left },
      'could not lease the invokes run in the API; renewing them shortly',
    );
  }
}

/**
 * The API process's runner, as CP_SYNC_INVOKES_IN_API says (`byDefault` when it is unset): put in
 * `infra.syncRuns`, or none.
 */
export function startSyncRuns(infra: Infra, byDefault: boolean): SyncRuns | null {
  if (!(infra.config.CP_SYNC_INVOKES_IN_API ?? byDefault)) return null;
  const runs = new SyncRuns(infra);
  infra.syncRuns = runs;
  return runs;
}
