import { OrgAtCapacity } from '../org-at-capacity';
import type { CompiledPolicySet } from './compile-policies';
import { reestimateWith, type CostBasis } from './cost-basis';
import { evaluatePolicies } from './evaluate-policies';
import type { EvaluationTime } from './evaluation-time';
import { worstPatternWork } from './pattern-budget';
import type { Action, EvaluationContext, PolicyDecision, PolicySet } from './policy';

/**
 * Pattern work (pattern-budget.ts units) past which an evaluation may be heavy: about 0.1 s for
 * the costliest patterns, a few milliseconds for plain ones.
 */
export const HEAVY_WORK = 2_000_000;
/** How long a job refused a place in the thread (assertRoomInThread) waits before it is taken again. */
const IN_THREAD_WAIT_MS = 250;

/** An evaluation's context as data (it may cross to another thread): the invoke's cost basis, not a function. */
export interface PlainContext {
  agentId: string | null;
  sessionId: string | null;
  /** Set for an invoke, whose modified action can be priced again (cost-basis.ts). */
  costBasis?: CostBasis;
}

/** One evaluation taken off this event loop: the org's policies as stored, the action, its context. */
export interface OffLoopEvaluation {
  set: PolicySet;
  action: Action;
  context: PlainContext;
}

/**
 * Runs evaluations somewhere other than this process's event loop (a worker thread). An
 * evaluation it cannot finish (past its time, its thread lost) is a deny saying so; it rejects
 * only once the process is stopping, so that the job is decided again elsewhere.
 */
export interface OffLoopEvaluator {
  evaluate(evaluation: OffLoopEvaluation): Promise<{ decision: PolicyDecision; ms: number }>;
}

/** The engine's context for an evaluation in this thread. */
export const contextOf = (context: PlainContext, action: Action): EvaluationContext => ({
  agentId: context.agentId,
  sessionId: context.sessionId,
  ...(context.costBasis ? { reestimate: reestimateWith(context.costBasis, action) } : {}),
});

/** Whether the evaluation's worst-case pattern work, known before it runs, is past HEAVY_WORK. */
const mayBeHeavy = (compiled: CompiledPolicySet, action: Action): boolean =>
  worstPatternWork(compiled, action) > HEAVY_WORK;

/** The stored set a compiled one was made from (compiling keeps only the enabled policies). */
const setOf = (compiled: CompiledPolicySet): PolicySet => ({
  orgId: compiled.orgId,
  policyVersion: compiled.policyVersion,
  ...(compiled.variant === undefined ? {} : { variant: compiled.variant }),
  policies: compiled.policies.map((p) => p.policy),
});

/**
 * The one way the guardian and `POST /v1/acs/evaluate` run the engine: within the org's share of
 * this process's evaluation time, and, for an evaluation that may be heavy (its worst-case
 * pattern work is known before it runs: HEAVY_WORK), off the event loop. A heavy evaluation takes
 * up to about 2 s of a core (pattern-budget.ts); on the event loop it held every other request
 * of the process that long, the API's too under `npm start`. Ordinary evaluations (tens of
 * microseconds) stay here: a hand-over to a thread would cost more than they do. Without a
 * thread (some tests), every evaluation runs here.
 */
export class EvaluationRunner {
  /** Each org's deferrable heavy evaluations sent to the thread and not yet answered. */
  private readonly inThread = new Map<string, number>();

  constructor(
    private readonly time: EvaluationTime,
    private readonly offLoop: OffLoopEvaluator | null,
  ) {}

  /** `deferrable`: the caller's job can wait its org's turn (evaluation-time.ts). */
  async evaluate(
    compiled: CompiledPolicySet,
    action: Action,
    context: PlainContext,
    deferrable: boolean,
  ): Promise<PolicyDecision> {
    const { orgId } = compiled;
    const thread = this.threadFor(compiled, action);
    if (!thread)
      return this.time.run(orgId, deferrable, () =>
        evaluatePolicies(compiled, action, contextOf(context, action)),
      );
    if (deferrable) this.assertRoomInThread(orgId);
    this.time.admit(orgId, deferrable);
    if (deferrable) this.inThread.set(orgId, (this.inThread.get(orgId) ?? 0) + 1);
    try {
      const { decision, ms } = await thread.evaluate({ set: setOf(compiled), action, context });
      this.time.charge(orgId, ms);
      return decision;
    } finally {
      if (deferrable) this.leave(orgId);
    }
  }

  /**
   * An evaluation outside the org's share, for the impact preview: it has bounds of its own (one
   * per org at a time, 5 s), and charging it would hold the org's invokes back for a what-if. One
   * that may be heavy still runs in the thread, so that it never holds this event loop.
   */
  async replay(compiled: CompiledPolicySet, action: Action, context: PlainContext): Promise<PolicyDecision> {
    const thread = this.threadFor(compiled, action);
    if (!thread) return evaluatePolicies(compiled, action, contextOf(context, action));
    return (await thread.evaluate({ set: setOf(compiled), action, context })).decision;
  }

  /** Where an evaluation that may be heavy goes (HEAVY_WORK); null: it runs on this event loop. */
  private threadFor(compiled: CompiledPolicySet, action: Action): OffLoopEvaluator | null {
    return this.offLoop && mayBeHeavy(compiled, action) ? this.offLoop : null;
  }

  /**
   * The share is charged once an evaluation is answered, so without this a burst of an org's jobs
   * would all be admitted before the first was charged (QA: one org's 60 heavy invokes at once held
   * another's 106 s), each holding a worker's slot while it waits its turn in the thread. So a
   * deferrable heavy evaluation goes to the thread only while its org has none there: otherwise
   * its job waits in the queue (not an attempt), as one past its share does. The checks before a
   * retry or an approved run cannot wait (they hold a reservation), and always go; the thread's
   * turns keep them from holding other orgs back.
   */
  private assertRoomInThread(orgId: string): void {
    if (!this.inThread.has(orgId)) return;
    throw new OrgAtCapacity(
      IN_THREAD_WAIT_MS,
      () => Promise.resolve(!this.inThread.has(orgId)),
      'a heavy policy evaluation in this process still running',
    );
  }

  private leave(orgId: string): void {
    const left = (this.inThread.get(orgId) ?? 1) - 1;
    if (left > 0) this.inThread.set(orgId, left);
    else this.inThread.delete(orgId);
  }
}
