import type { RE2JS } from 're2js';
import { compilePattern } from './limits';
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

function compilePolicy(policy: Policy): CompiledPolicy {
  try {
    return {
      policy,
      rules: policy.rules.map((rule, index) => ({ index, rule, regex: regexOf(rule, index) })),
      error: null,
    };
  } catch (err) {
    return { policy, rules: [], error: err instanceof Error ? err.message : String(err) };
  }
}

/**
 * Compiles an org's policy set once per policy_version: patterns on RE2 (linear time, whatever
 * the input), policies in evaluation order. The store refuses patterns that do not compile, so a
 * compile error here is defence in depth: that policy denies, naming itself.
 */
export function compilePolicies(set: PolicySet): CompiledPolicySet {
  const enabled = set.policies.filter((p) => p.enabled);
  enabled.sort(inOrder);
  return { orgId: set.orgId, policyVersion: set.policyVersion, policies: enabled.map(compilePolicy) };
}

/** Evaluation order: highest priority first, then by id. */
const inOrder = (a: Policy, b: Policy) => b.priority - a.priority || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** A compiled set with one more policy, compiling only that one (the preview's draft). */
export function withPolicy(compiled: CompiledPolicySet, policy: Policy): CompiledPolicySet {
  if (!policy.enabled) return compiled;
  const policies = [...compiled.policies, compilePolicy(policy)];
  policies.sort((a, b) => inOrder(a.policy, b.policy));
  return { ...compiled, policies };
}

/** The instructions of a compiled set's patterns (what MAX_ORG_PATTERN_PROGRAM bounds), without compiling again. */
export const patternInstructions = (set: CompiledPolicySet): number =>
  set.policies.reduce(
    (sum, p) => sum + p.rules.reduce((n, r) => n + (r.regex ? r.regex.matcher('').programSize() : 0), 0),
    0,
  );

/**
 * What a compiled set weighs in memory, roughly: its patterns' instructions (about 130 bytes
 * each, measured by QA) and one for each rule, so many small sets count too.
 */
export const compiledWeight = (set: CompiledPolicySet): number =>
  patternInstructions(set) + set.policies.reduce((sum, p) => sum + p.rules.length, 0);
