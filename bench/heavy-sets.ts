import { MAX_ORG_PATTERN_PROGRAM, MAX_RULES_PER_POLICY, compilePattern } from '../domain/policy/limits';
import type { Policy, PolicySet, Rule } from '../domain/policy/policy';
import { testPolicy } from '../test/support/test-policy';

/** A costly pattern (about 1,200 instructions), distinct per org and rule so that nothing is shared. */
const heavyPattern = (org: number, rule: number) => `(?:\\w*a){400}[^\\w]o${org}r${rule}`;

/** An org's set: as many heavy patterns as fit its limit, in policies of at most 50 rules. */
export function policySetAtLimit(org: number): PolicySet {
  const orgId = `org_${org}`;
  const rules: Rule[] = [];
  let instructions = 0;
  for (;;) {
    const pattern = heavyPattern(org, rules.length);
    const size = compilePattern(pattern).matcher('').programSize();
    if (instructions + size > MAX_ORG_PATTERN_PROGRAM) break;
    rules.push({ type: 'deny_pattern', pattern });
    instructions += size;
  }
  const policies: Policy[] = [];
  for (let i = 0; i < rules.length; i += MAX_RULES_PER_POLICY)
    policies.push(testPolicy(rules.slice(i, i + MAX_RULES_PER_POLICY), { id: `pol_${org}_${i}`, orgId }));
  return { orgId, policyVersion: 1, policies };
}
