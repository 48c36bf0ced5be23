import type { CapLedger } from '../budget/cap-ledger';
import { NOTHING, type CapAmounts } from '../budget/charges';
import type { Clock } from '../clock';
import { isTerminal, type Invocation } from './invocation';
import type { InvocationStore } from './invocation-store';
import { endWithoutUsage, recordOutcome } from './outcomes';
import type { CompletionSignal, InvocationStage, StageQueue } from './signals';

export interface ReapDeps {
  store: InvocationStore;
  queue: StageQueue;
  ledger: CapLedger;
  signal: CompletionSignal;
  clock: Clock;
  /** An invocation queued or running this long without progress is checked against its job. */
  stuckAfterMs: number;
  /** A reservation held this long is checked against its invocation. */
  leaseGraceMs: number;
}

export interface ReapReport {
  requeued: number;
  failed: number;
  released: number;
}

const stageOf = (i: Invocation): InvocationStage =>
  i.status === 'queued' ? 'invocation.evaluate' : 'invocation.run';

/** What a finished invocation was charged, to settle a reservation its worker never settled. */
const chargedBy = (invocation: Invocation): CapAmounts => ({
  costMicros: invocation.costMicros,
  calls: invocation.chargedCalls,
  tokens: (invocation.usage?.inputTokens ?? 0) + (invocation.usage?.outputTokens ?? 0),
});

/**
 * A job that is gone (Redis lost it, or the API died before enqueueing) is enqueued again: every
 * stage is idempotent. A job that ended without finishing the invocation (it stalled too often, or
 * failed for good) ends the invocation as failed, and its reservation is returned.
 */
async function recoverStuck(deps: ReapDeps, report: ReapReport): Promise<void> {
  const before = new Date(deps.clock.now().getTime() - deps.stuckAfterMs);
  const stuck = await deps.store.stuck(before, 100);
  for (const invocation of stuck) {
    const state = await deps.queue.state(stageOf(invocation), invocation.id);
    if (state === 'alive') continue;
    if (state === 'gone') {
      const job = { invocation_id: invocation.id, org_id: invocation.orgId, trace: {} };
      await deps.queue.requeue(stageOf(invocation), job);
      report.requeued++;
    } else if (await failLost(deps, invocation)) report.failed++;
  }
}

/** Fails an invocation whose job ended without it; a running one's reservation is returned. */
async function failLost(deps: ReapDeps, invocation: Invocation): Promise<boolean> {
  const error = { errorCode: 'worker_lost', message: 'the worker running this invocation stopped; retry it' };
  const write = endWithoutUsage(invocation, [invocation.status], 'failed', error, deps.clock.now());
  const release = () => deps.ledger.settle(invocation.sessionId, invocation.id, NOTHING);
  const written = await recordOutcome(
    deps,
    invocation,
    write,
    invocation.status === 'running' ? release : undefined,
  );
  return written === 'applied';
}

/**
 * A reservation whose invocation already finished was left behind by a worker that died between
 * recording the result and settling: settle it at what the invocation was charged (settling is
 * idempotent, so a late worker settling too changes nothing).
 */
async function releaseLeftovers(deps: ReapDeps, report: ReapReport): Promise<void> {
  const held = await deps.ledger.heldLongerThan(deps.leaseGraceMs, 200);
  if (held.length === 0) return;
  const byId = new Map((await deps.store.getMany(held.map((h) => h.invocationId))).map((i) => [i.id, i]));
  for (const { sessionId, invocationId } of held) {
    const invocation = byId.get(invocationId);
    if (invocation && !isTerminal(invocation.status)) continue;
    await deps.ledger.settle(sessionId, invocationId, invocation ? chargedBy(invocation) : NOTHING);
    report.released++;
  }
}

/** The reaper job: no reservation outlives its job, and no invocation waits on a job that is gone. */
export async function reapInvocations(deps: ReapDeps): Promise<ReapReport> {
  const report = { requeued: 0, failed: 0, released: 0 };
  await recoverStuck(deps, report);
  await releaseLeftovers(deps, report);
  return report;
}
