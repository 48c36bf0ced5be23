/**
 * The policy thread's script (policy-thread.ts starts it): evaluates what it is sent with the same
 * pure engine the event loop runs, each set compiled once per policy_version, and posts back the
 * decision and the time it took. One evaluation at a time; nothing here touches a database.
 */
import { parentPort } from 'node:worker_threads';
import { compilePolicies, type CompiledPolicySet } from '../../domain/policy/compile-policies';
import { evaluatePolicies } from '../../domain/policy/evaluate-policies';
import { contextOf, type OffLoopEvaluation } from '../../domain/policy/evaluation-runner';
import type { PolicySet } from '../../domain/policy/policy';
import { THREAD_READY, type ThreadAnswer } from './policy-thread';

/**
 * Compiled sets kept, by org (and beside it, the org's last previewed draft: slotOf). The orgs whose
 * evaluations are heavy are few. A set is at most about
 * 13 MB (MAX_ORG_PATTERN_PROGRAM), so these fit the thread's heap with room for the evaluation's
 * own work (QA: 64 of the sets allowed before that limit ran the thread out of memory, and one
 * org's verdict then depended on which others' sets were kept).
 */
const KEEP_SETS = 16;
const compiledSets = new Map<string, CompiledPolicySet>();

/** A set with a variant (a preview's draft added) never takes the place of the org's stored set. */
const slotOf = (set: PolicySet): string => (set.variant === undefined ? set.orgId : `${set.orgId} draft`);

function compiledOf(set: PolicySet): CompiledPolicySet {
  const slot = slotOf(set);
  const kept = compiledSets.get(slot);
  if (kept && kept.policyVersion === set.policyVersion && kept.variant === set.variant) return kept;
  const compiled = compilePolicies(set);
  compiledSets.delete(slot);
  compiledSets.set(slot, compiled);
  // A Map iterates in insertion order: the first key is the set used longest ago.
  if (compiledSets.size > KEEP_SETS) compiledSets.delete(compiledSets.keys().next().value as string);
  return compiled;
}

function answer({ set, action, context }: OffLoopEvaluation): ThreadAnswer {
  const started = performance.now();
  try {
    const decision = evaluatePolicies(compiledOf(set), action, contextOf(context, action));
    return { decision, ms: performance.now() - started };
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err), ms: performance.now() - started };
  }
}

parentPort?.on('message', (evaluation: OffLoopEvaluation) => parentPort?.postMessage(answer(evaluation)));
parentPort?.postMessage(THREAD_READY);
