/**
 * The policy thread's script (policy-thread.ts starts it): evaluates what it is sent with the same
 * pure engine the event loop runs, each set compiled once per policy_version, and posts back the
 * decision and the time it took. One evaluation at a time; nothing here touches a database.
 */
import { parentPort } from 'node:worker_threads';
import { compilePolicies } from '../../domain/policy/compile-policies';
import { evaluatePolicies } from '../../domain/policy/evaluate-policies';
import { contextOf, type OffLoopEvaluation } from '../../domain/policy/evaluation-runner';
import type { Action, Policy, Rule } from '../../domain/policy/policy';
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

/**
 * One small evaluation before the thread says it is ready: the pattern engine's code is loaded and
 * warm by then, so a new thread's first evaluation is not charged for that against its time limit.
 */
function warmUp(): void {
  const action: Action = {
    type: 'llm.invoke',
    model: 'warm-up',
    messages: [{ role: 'user', content: 'card 4111' }],
  };
  const rules: Rule[] = [
    { type: 'deny_pattern', pattern: 'sk-[a-z]+' },
    { type: 'redact_pattern', pattern: '\\d{4}', replacement: '#' },
  ];
  const policy: Policy = {
    id: 'warm-up',
    orgId: 'warm-up',
    name: 'warm-up',
    description: null,
    enabled: true,
    priority: 0,
    mode: 'enforce',
    appliesTo: {},
    rules,
    version: 1,
    createdAt: new Date(0),
    updatedAt: new Date(0),
  };
  const set = compilePolicies({ orgId: 'warm-up', policyVersion: 0, policies: [policy] });
  evaluatePolicies(set, action, contextOf({ agentId: null, sessionId: null }, action));
}

warmUp();
parentPort?.on('message', (evaluation: OffLoopEvaluation) => parentPort?.postMessage(answer(evaluation)));
parentPort?.postMessage(THREAD_READY);
