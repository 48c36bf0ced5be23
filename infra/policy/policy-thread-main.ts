/**
 * The policy thread's script (policy-thread.ts starts it): evaluates what it is sent with the same
 * pure engine the event loop runs, each set compiled once per policy_version, and posts back the
 * decision and the time it took. One evaluation at a time; nothing here touches a database.
 */
import { parentPort } from 'node:worker_threads';
import { evaluatePolicies } from '../../domain/policy/evaluate-policies';
import { contextOf, type OffLoopEvaluation } from '../../domain/policy/evaluation-runner';
import { THREAD_READY, type ThreadAnswer } from './policy-thread';
import { ThreadSets } from './thread-sets';

const sets = new ThreadSets();

function answer({ set, action, context }: OffLoopEvaluation): ThreadAnswer {
  const started = performance.now();
  try {
    const decision = evaluatePolicies(sets.compiledOf(set), action, contextOf(context, action));
    return { decision, ms: performance.now() - started };
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err), ms: performance.now() - started };
  }
}

parentPort?.on('message', (evaluation: OffLoopEvaluation) => parentPort?.postMessage(answer(evaluation)));
parentPort?.postMessage(THREAD_READY);
