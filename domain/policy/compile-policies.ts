import type { RE2JS } from 're2js';
import { compilePattern, listWeightOf } from './limits';
import type { Policy, PolicySet, Rule } from './policy';

/** A rule ready to evaluate: its pattern, if any, compiled once for the policy_version. */
export interface CompiledRule {
  index: number;
  rule: Rule;
  regex: RE2JS | null;
}

export interface CompiledPolicy {
  policy: Policy;
  rules: CompiledRule[];
  /** Why the policy could not be compiled: it then evaluates as a fail-closed deny. */
  error: string | null;
}

export interface CompiledPolicySet {
  orgId: string;
  policyVersion: number;
  /** As the set's (PolicySet.variant). */
  variant?: string;
  /** Enabled policies, highest priority first (then by id, so the order is stable). */
  policies: CompiledPolicy[];
}

function regexOf(rule: Rule, index: number): RE2JS | null {
  try {
    if (rule.type === 'deny_pattern') return compilePattern(rule.pattern, rule.flags);
    if (rule.type === 'redact_pattern') return compilePattern(rule.pattern);
    return null;
  } catch (err) {
    throw new Error(`rule ${index}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** Compiles a policy's rules in order, pausing (`yield`) after each. */
function* compiling(policy: Policy): Generator<void, CompiledPolicy> {
  const rules: CompiledRule[] = [];
  for (const [index, rule] of policy.rules.entries()) {
    try {
      rules.push({ index, rule, regex: regexOf(rule, index) });
    } catch (err) {
      return { policy, rules: [], error: err instanceof Error ? err.message : String(err) };
    }
    yield;
  }
  return { policy, rules, error: null };
}

/** Compiles an org's enabled policies in evaluation order, pausing (`yield`) after each rule. */
function* compilingSet(set: PolicySet): Generator<void, CompiledPolicySet> {
  const enabled = set.policies.filter((p) => p.enabled);
  enabled.sort(inOrder);
  const policies: CompiledPolicy[] = [];
  for (const policy of enabled) policies.push(yield* compiling(policy));
  return {
    orgId: set.orgId,
    policyVersion: set.policyVersion,
    ...(set.variant === undefined ? {} : { variant: set.variant }),
    policies,
  };
}

/** Runs a compilation through in one piece. */
function atOnce<T>(steps: Generator<void, T>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/** Runs a compilation through, awaiting `between` at each of its pauses. */
async function inTurns<T>(steps: Generator<void, T>, between: () => Promise<void>): Promise<T> {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    await between();
  }
}

/**
 * Compiles a policy one rule at a time, awaiting `between` after each: a pattern compiles in up to
 * about 2 ms, a policy of 50 of the largest in about 100 (the preview's draft, compiled on the
 * API's event loop, lets other requests run meanwhile).
 */
export const compilePolicyInTurns = (policy: Policy, between: () => Promise<void>): Promise<CompiledPolicy> =>
  inTurns(compiling(policy), between);

/**
 * Compiles an org's policy set once per policy_version: patterns on RE2 (linear time, whatever
 * the input), policies in evaluation order. The store refuses patterns that do not compile, so a
 * compile error here is defence in depth: that policy denies, naming itself.
 */
export const compilePolicies = (set: PolicySet): CompiledPolicySet => atOnce(compilingSet(set));

/**
 * compilePolicies, awaiting `between` after each rule: at each policy_version a process compiles
 * the org's set on its event loop, and a set at the org's pattern limit takes about a tenth of a
 * second in one piece.
 */
export const compilePoliciesInTurns = (
  set: PolicySet,
  between: () => Promise<void>,
): Promise<CompiledPolicySet> => inTurns(compilingSet(set), between);

/** Evaluation order: highest priority first, then by id. */
const inOrder = (a: Policy, b: Policy) => b.priority - a.priority || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * A compiled set with one more policy, compiled already (the preview's draft), as the `variant`
 * named: the set the org would have with it. A disabled policy leaves the set as it is.
 */
export function withCompiled(
  set: CompiledPolicySet,
  added: CompiledPolicy,
  variant: string,
): CompiledPolicySet {
  if (!added.policy.enabled) return set;
  const policies = [...set.policies, added];
  policies.sort((a, b) => inOrder(a.policy, b.policy));
  return { ...set, variant, policies };
}

/** The instructions of a compiled policy's patterns, without compiling again. */
export const policyInstructions = (policy: CompiledPolicy): number =>
  policy.rules.reduce((n, r) => n + (r.regex ? r.regex.matcher('').programSize() : 0), 0);

/** The instructions of a compiled set's patterns (what MAX_ORG_PATTERN_PROGRAM bounds). */
export const patternInstructions = (set: CompiledPolicySet): number =>
  set.policies.reduce((sum, p) => sum + policyInstructions(p), 0);

/**
 * What a compiled set weighs in memory, roughly: its patterns' instructions (about 130 bytes
 * each, measured by QA), one for each rule, so many small sets count too, and its lists' items
 * by their length (listWeightOf).
 */
export const compiledWeight = (set: CompiledPolicySet): number =>
  patternInstructions(set) +
  set.policies.reduce((sum, p) => sum + p.rules.length + listWeightOf(p.policy), 0);
