import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { OffLoopEvaluation, OffLoopEvaluator } from '../../domain/policy/evaluation-runner';
import type { PolicyDecision } from '../../domain/policy/policy';

/**
 * Past this, an evaluation in the thread is abandoned and the thread ended: five times the worst
 * an evaluation may take (about 2 s, pattern-budget.ts), for a slow hour on a slow machine.
 */
export const THREAD_EVALUATION_LIMIT_MS = 10_000;
/** What a new thread may take to load its code (about 50 ms compiled, 0.3 s from source) before its first evaluation's limit. */
const THREAD_START_MS = 10_000;
/**
 * The thread's heap: the compiled sets it keeps (at most about 200 MB, policy-thread-main.ts) and
 * an evaluation's work (a 1 MiB prompt redacted by many patterns needs tens of megabytes).
 */
const THREAD_HEAP_MB = 512;

/** What the thread posts back for one evaluation, and how long it took there. */
export type ThreadAnswer = { decision: PolicyDecision; ms: number } | { error: string; ms: number };
/** What the thread posts once, when its code is loaded. */
export const THREAD_READY = 'ready';

interface Pending {
  evaluation: OffLoopEvaluation;
  resolve(answer: { decision: PolicyDecision; ms: number }): void;
  reject(err: Error): void;
  startedAt: number;
  timer?: NodeJS.Timeout;
}

/** Run from source (tests, `npm run dev`), the thread compiles its TypeScript as tsx does here. */
const SCRIPT = join(__dirname, `policy-thread-main${__filename.endsWith('.ts') ? '.ts' : '.js'}`);
const execArgv = () => (SCRIPT.endsWith('.ts') ? ['--require', require.resolve('tsx/cjs')] : []);

const stopping = () => new Error('the process is stopping: the policy evaluation was not run');

/** Fail closed: an evaluation the thread could not finish denies, saying why. */
const denied = (evaluation: OffLoopEvaluation, why: string): PolicyDecision => ({
  verdict: 'deny',
  reasons: [
    {
      policyId: null,
      ruleIndex: null,
      code: 'policy_evaluation_failed',
      message: `the org's policies could not be evaluated (${why}); denied`,
    },
  ],
  shadowReasons: [],
  modifiedAction: null,
  approval: null,
  policyVersion: evaluation.set.policyVersion,
});

/**
 * One worker thread per process for the evaluations that may be heavy (evaluation-runner.ts),
 * started on first use. They run one at a time, orgs taking turns (dequeue); the org shares of
 * evaluation time bound how much of it each org takes. An evaluation that outlives
 * `limitMs`, or a thread that fails, denies it; the thread is ended and a new one started for
 * the next.
 */
export class PolicyThread implements OffLoopEvaluator {
  private worker: Worker | null = null;
  /** The thread's code is loaded: an evaluation's time limit runs from then, not from its start. */
  private ready = false;
  private current: Pending | null = null;
  /** Each org's evaluations waiting, in the order asked; orgs take turns (`turns`), one evaluation each. */
  private readonly waiting = new Map<string, Pending[]>();
  private readonly turns: string[] = [];
  /** Closed: no thread is started again (a job finishing during shutdown is denied instead). */
  private closed = false;

  constructor(
    private readonly warn: (message: string, fields: Record<string, unknown>) => void,
    private readonly limitMs = THREAD_EVALUATION_LIMIT_MS,
  ) {}

  evaluate(evaluation: OffLoopEvaluation): Promise<{ decision: PolicyDecision; ms: number }> {
    return new Promise((resolve, reject) => {
      const pending = { evaluation, resolve, reject, startedAt: 0 };
      if (this.closed) return reject(stopping());
      this.enqueue(pending);
      this.next();
    });
  }

  /**
   * Ends the thread. Evaluations not answered yet are rejected, not denied: their jobs fail this
   * attempt and are decided again by a worker that goes on, instead of recording a deny.
   */
  async close(): Promise<void> {
    this.closed = true;
    const unanswered = [...(this.current ? [this.current] : []), ...[...this.waiting.values()].flat()];
    this.current = null;
    this.waiting.clear();
    this.turns.length = 0;
    for (const pending of unanswered) {
      clearTimeout(pending.timer);
      pending.reject(stopping());
    }
    await this.end();
  }

  private enqueue(pending: Pending): void {
    const { orgId } = pending.evaluation.set;
    const line = this.waiting.get(orgId);
    if (line) return void line.push(pending);
    this.waiting.set(orgId, [pending]);
    this.turns.push(orgId);
  }

  /**
   * The next evaluation: the first of the org whose turn it is, that org then going to the back.
   * An org that asks for many (approved runs let go at once, say) has one of them evaluated per
   * round, so another org waits at most one evaluation of each org ahead of it (about 2 s each),
   * not all of them (QA: 29 approved runs at once held another org's evaluation 16 s).
   */
  private dequeue(): Pending | undefined {
    const orgId = this.turns.shift();
    if (orgId === undefined) return undefined;
    const line = this.waiting.get(orgId) as Pending[];
    const pending = line.shift();
    if (line.length > 0) this.turns.push(orgId);
    else this.waiting.delete(orgId);
    return pending;
  }

  private next(): void {
    if (this.current) return;
    const pending = this.dequeue();
    if (!pending) return;
    this.current = pending;
    try {
      this.started().postMessage(pending.evaluation);
    } catch (err) {
      // Nothing was sent (a value that cannot be copied, a thread that cannot start): deny this one alone.
      this.current = null;
      this.finish(pending, { error: `it could not be sent to its thread: ${(err as Error).message}` });
      return this.next();
    }
    this.startClock(pending, this.ready ? this.limitMs : this.limitMs + THREAD_START_MS);
  }

  private startClock(pending: Pending, limitMs = this.limitMs): void {
    clearTimeout(pending.timer);
    pending.startedAt = performance.now();
    pending.timer = setTimeout(() => this.abandon(`it took more than ${this.limitMs} ms`), limitMs);
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(SCRIPT, {
      execArgv: execArgv(),
      resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB },
    });
    // A process that is otherwise done does not wait for an idle thread.
    worker.unref();
    // Only this thread's answers: one ended a moment ago may still have posted one.
    worker.on('message', (answer: ThreadAnswer | typeof THREAD_READY) => {
      if (this.worker !== worker) return;
      if (answer !== THREAD_READY) return this.answered(answer);
      this.ready = true;
      if (this.current) this.startClock(this.current);
    });
    worker.on('error', (err) => this.abandon(`its thread failed: ${err.message}`));
    worker.on('exit', () => {
      if (this.worker === worker) this.abandon('its thread stopped');
    });
    this.worker = worker;
    return worker;
  }

  private answered(answer: ThreadAnswer): void {
    const pending = this.current;
    if (!pending) return;
    this.current = null;
    this.finish(pending, answer);
    this.next();
  }

  /** The evaluation in the thread is given up: denied, and the thread replaced for the next. */
  private abandon(why: string): void {
    const pending = this.current;
    this.current = null;
    void this.end();
    if (pending) {
      this.warn('a policy evaluation was abandoned in its thread; it was denied', {
        org_id: pending.evaluation.set.orgId,
        policy_version: pending.evaluation.set.policyVersion,
        reason: why,
      });
      this.finish(pending, { error: why });
    }
    this.next();
  }

  private finish(pending: Pending, answer: ThreadAnswer | { error: string }): void {
    clearTimeout(pending.timer);
    const ms = 'ms' in answer ? answer.ms : performance.now() - (pending.startedAt || performance.now());
    const decision = 'decision' in answer ? answer.decision : denied(pending.evaluation, answer.error);
    pending.resolve({ decision, ms });
  }

  private async end(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    this.ready = false;
    if (worker) await worker.terminate();
  }
}
