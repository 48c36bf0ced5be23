import { OrgAtCapacity } from '../org-at-capacity';
import type { CompiledPolicySet } from './compile-policies';
import { reestimateWith, type CostBasis } from './cost-basis';
import { evaluatePolicies } from './evaluate-policies';
import { HEAVY_WORK, type EvaluationTime } from './evaluation-time';
import { worstPatternWork } from './pattern-budget';
import type { Action, EvaluationContext, PolicyDecision, PolicySet } from './policy';

/** How long a job refused a place in the thread (assertRoomInThread) waits before it is taken again. */
const IN_THREAD_WAIT_MS = 250;
/**
 * Deferrable evaluations in the thread at once, of every org: the one running and one ready to
 * follow. Each takes up to about 2 s, so none waits in the thread more than about 4 s.
 */
export const MAX_IN_THREAD = 2;

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

/** The stored set a compiled one was made from (compiling keeps only the enabled policies). */
const setOf = (compiled: CompiledPolicySet): PolicySet => ({
  orgId: compiled.orgId,
  policyVersion: compiled.policyVersion,
  policies: compiled.policies.map((p) => p.policy),
});

/**
 * The one way the guardian and `POST /v1/acs/evaluate` run the engine: within the org's share of
 * this process's evaluation time, and, for an evaluation that may be heavy (its worst-case
 * pattern work is known before it runs: HEAVY_WORK), off the event loop. A heavy evaluation takes
 * up to about 2 s of a core (pattern-budget.ts); on the event loop it held every other request
 * of the process that long, the API's too under `npm start`. Ordinary evaluations (tens of
 * microseconds) stay here: a hand-over to a thread would cost more than they do.
 */
export class EvaluationRunner {
  /** Each org's heavy evaluations sent to the thread and not yet answered. */
  private readonly inThread = new Map<string, number>();
  /** The deferrable ones among them, of every org. */
  private deferrableInThread = 0;

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
    const kind = { deferrable, heavy: worstPatternWork(compiled, action) > HEAVY_WORK };
    const { orgId } = compiled;
    if (!kind.heavy || !this.offLoop)
      return this.time.run(orgId, kind, () => evaluatePolicies(compiled, action, contextOf(context, action)));
    if (deferrable) this.assertRoomInThread(orgId);
    this.time.admit(orgId, kind);
    this.enter(orgId, deferrable);
    try {
      const { decision, ms } = await this.offLoop.evaluate({ set: setOf(compiled), action, context });
      this.time.charge(orgId, ms, true);
      return decision;
    } finally {
      this.leave(orgId, deferrable);
    }
  }

  /**
   * The shares are charged once an evaluation is answered, so without this a burst of jobs would
   * all be admitted before the first was charged and queue minutes of work in the thread ahead of
   * every other org's (QA: one org's 60 heavy invokes at once held another's 106 s). So a
   * deferrable heavy evaluation goes to the thread only while its org has none there and fewer
   * than MAX_IN_THREAD of every org are: otherwise its job waits its turn in the queue (not an
   * attempt), as one past its share does. The checks before a retry or an approved run cannot
   * wait (they hold a reservation), and always go.
   */
  private assertRoomInThread(orgId: string): void {
    if (!this.inThread.has(orgId) && this.deferrableInThread < MAX_IN_THREAD) return;
    throw new OrgAtCapacity(
      IN_THREAD_WAIT_MS,
      () => Promise.resolve(!this.inThread.has(orgId) && this.deferrableInThread < MAX_IN_THREAD),
      'a heavy policy evaluation in this process still running, or the policy thread is full',
    );
  }

  private enter(orgId: string, deferrable: boolean): void {
    this.inThread.set(orgId, (this.inThread.get(orgId) ?? 0) + 1);
    if (deferrable) this.deferrableInThread++;
  }

  private leave(orgId: string, deferrable: boolean): void {
    const left = (this.inThread.get(orgId) ?? 1) - 1;
    if (left > 0) this.inThread.set(orgId, left);
    else this.inThread.delete(orgId);
    if (deferrable) this.deferrableInThread--;
  }
}
