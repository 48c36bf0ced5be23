import type { CapLedger } from '../budget/cap-ledger';
import { chargeIdOf, parseChargeId } from '../budget/charge-id';
import { NOTHING, type CapAmounts } from '../budget/charges';
import type { Clock } from '../clock';
import type { Invocation } from './invocation';
import { isTerminal, stageOf } from './lifecycle';
import type { InvocationStore } from './invocation-store';
import { NO_CHARGE, reservationCharge } from './attempt-charges';
import { outcomeWrite, recordOutcome } from './outcomes';
import type { CompletionSignal, StageQueue } from './signals';

export interface ReapDeps {
  store: InvocationStore;
  queue: StageQueue;
  ledger: CapLedger;
  signal: CompletionSignal;
  clock: Clock;
  /** Whether a live API process runs the invocation itself (it has no job: CP_SYNC_INVOKES_IN_API). */
  runningInApi(invocationId: string): Promise<boolean>;
  /** An invocation queued or running this long without progress is checked against its job. */
  stuckAfterMs: number;
  /** A reservation held this long is checked against its invocation. */
  leaseGraceMs: number;
  warn(message: string, fields: Record<string, unknown>): void;
}

export interface ReapReport {
  requeued: number;
  failed: number;
  released: number;
}

/** What a finished invocation was charged, to settle a reservation its worker never settled. */
const chargedBy = (invocation: Invocation): CapAmounts => ({
  costMicros: invocation.costMicros,
  calls: invocation.chargedCalls,
  tokens: (invocation.usage?.inputTokens ?? 0) + (invocation.usage?.outputTokens ?? 0),
});

/**
 * A job that is gone (Redis lost it, the API died before enqueueing, or the API process that ran
 * the invocation itself died: its lease lapsed) is enqueued again: every
 * stage is idempotent. A job that ended without finishing the invocation (it stalled too often, or
 * failed for good) ends the invocation as failed, and its reservation is returned.
 */
async function recoverStuck(deps: ReapDeps, report: ReapReport): Promise<void> {
  const before = new Date(deps.clock.now().getTime() - deps.stuckAfterMs);
  const stuck = await deps.store.stuck(before, 100);
  for (const invocation of stuck) {
    const stage = stageOf(invocation.status);
    if (!stage) continue;
    const state = await deps.queue.state(stage, invocation.id);
    if (state === 'alive' || (await deps.runningInApi(invocation.id))) continue;
    if (state === 'gone') {
      const job = { invocation_id: invocation.id, org_id: invocation.orgId, trace: {} };
      await deps.queue.requeue(stage, job);
      report.requeued++;
    } else if (await failLost(deps, invocation)) report.failed++;
  }
}

/**
 * Fails an invocation whose job ended without it. A running one whose attempt still holds its
 * reservation (or whose ledger state is gone) may have reached the provider: that attempt is
 * charged at its reservation, as an unknown outcome is. One that holds nothing is charged nothing.
 */
async function failLost(deps: ReapDeps, invocation: Invocation): Promise<boolean> {
  const error = { errorCode: 'worker_lost', message: 'the worker running this invocation stopped; retry it' };
  const number = invocation.providerAttempts + 1;
  const chargeId = chargeIdOf(invocation.id, number);
  const held =
    stageOf(invocation.status) === 'invocation.run' &&
    (await deps.ledger.isHeld(invocation.sessionId, chargeId)) !== false;
  const charge = held ? reservationCharge(invocation) : NO_CHARGE;
  const write = outcomeWrite(
    invocation,
    { from: [invocation.status], status: 'failed', error, charge, providerAttempt: held ? number : null },
    deps.clock.now(),
  );
  const settle = () => deps.ledger.settle(invocation.sessionId, chargeId, charge.amounts);
  const written = await recordOutcome(
    deps,
    invocation,
    write,
    stageOf(invocation.status) === 'invocation.run' ? settle : undefined,
  );
  return written === 'applied';
}

/**
 * A reservation whose attempt was already recorded was left behind by a worker that died between
 * recording and settling: settle it at what the invocation was charged, capped by the script at
 * what the attempt held (settling is idempotent, so a late worker settling too changes nothing).
 * The attempt in flight of an unfinished invocation is left alone.
 */
async function releaseLeftovers(deps: ReapDeps, report: ReapReport): Promise<void> {
  const held = await deps.ledger.heldLongerThan(deps.leaseGraceMs, 200);
  if (held.length === 0) return;
  const charges = held.map((h) => ({ sessionId: h.sessionId, ...parseChargeId(h.invocationId) }));
  const invocations = await deps.store.getMany([...new Set(charges.map((c) => c.invocationId))]);
  const byId = new Map(invocations.map((i) => [i.id, i]));
  for (const { sessionId, invocationId, attempt } of charges) {
    const invocation = byId.get(invocationId);
    if (invocation && !isTerminal(invocation.status) && attempt > invocation.providerAttempts) continue;
    const chargeId = chargeIdOf(invocationId, attempt);
    try {
      await deps.ledger.settle(sessionId, chargeId, invocation ? chargedBy(invocation) : NOTHING);
      report.released++;
    } catch (err) {
      // One lease the ledger refuses must not keep the leases after it (of any org) held (QA).
      deps.warn('a reservation left behind could not be settled; the next reap tries again', {
        session_id: sessionId,
        charge_id: chargeId,
        err,
      });
    }
  }
}

/** The reaper job: no reservation outlives its job, and no invocation waits on a job that is gone. */
export async function reapInvocations(deps: ReapDeps): Promise<ReapReport> {
  const report = { requeued: 0, failed: 0, released: 0 };
  await recoverStuck(deps, report);
  await releaseLeftovers(deps, report);
  return report;
}
