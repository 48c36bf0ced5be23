import { RE2JS } from 're2js';
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

const FLAG_BITS: Record<string, number> = { i: RE2JS.CASE_INSENSITIVE, m: RE2JS.MULTILINE, s: RE2JS.DOTALL };

function compileRegex(pattern: string, flags = ''): RE2JS {
  let bits = 0;
  for (const flag of flags) {
    const bit = FLAG_BITS[flag];
    if (bit === undefined) throw new Error(`unknown regex flag "${flag}"`);
    bits |= bit;
  }
  return RE2JS.compile(pattern, bits);
}

const regexOf = (rule: Rule): RE2JS | null =>
  rule.type === 'deny_pattern'
    ? compileRegex(rule.pattern, rule.flags)
    : rule.type === 'redact_pattern'
      ? compileRegex(rule.pattern)
      : null;

function compilePolicy(policy: Policy): CompiledPolicy {
  try {
    return {
      policy,
      rules: policy.rules.map((rule, index) => ({ index, rule, regex: regexOf(rule) })),
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
  enabled.sort((a, b) => b.priority - a.priority || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { orgId: set.orgId, policyVersion: set.policyVersion, policies: enabled.map(compilePolicy) };
}
