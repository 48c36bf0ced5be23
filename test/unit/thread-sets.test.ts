import type { PolicySet } from '../../domain/policy/policy';
import { ThreadSets } from '../../infra/policy/thread-sets';
import { testPolicy } from '../support/test-policy';

/** The policy thread's compiled sets (infra/policy/thread-sets.ts). */
const setOf = (orgId: string, policyVersion = 1, variant?: string): PolicySet => ({
  orgId,
  policyVersion,
  ...(variant === undefined ? {} : { variant }),
  policies: [testPolicy([{ type: 'deny_pattern', pattern: `${orgId}-${policyVersion}` }], { orgId })],
});

it('compiles a set once per version, and again for a new one', () => {
  const sets = new ThreadSets(4);
  const first = sets.compiledOf(setOf('org_a'));
  expect(sets.compiledOf(setOf('org_a'))).toBe(first);
  const newer = sets.compiledOf(setOf('org_a', 2));
  expect(newer).not.toBe(first);
  expect(newer.policyVersion).toBe(2);
  expect(sets.size).toBe(1);
});

it('keeps the sets used last: one in use is never the one pushed out', () => {
  const sets = new ThreadSets(2);
  const hot = sets.compiledOf(setOf('org_hot'));
  sets.compiledOf(setOf('org_b'));
  expect(sets.compiledOf(setOf('org_hot'))).toBe(hot); // used again: now the last
  sets.compiledOf(setOf('org_c')); // pushes out org_b, used longest ago
  expect(sets.size).toBe(2);
  expect(sets.compiledOf(setOf('org_hot'))).toBe(hot);
});

it("keeps a drafted set beside the org's stored one, one draft an org, each draft compiled apart", () => {
  const sets = new ThreadSets(4);
  const stored = sets.compiledOf(setOf('org_a'));
  const draft = sets.compiledOf(setOf('org_a', 1, 'draft:1'));
  expect(draft).not.toBe(stored);
  expect(draft.variant).toBe('draft:1');
  expect(sets.compiledOf(setOf('org_a'))).toBe(stored);
  expect(sets.compiledOf(setOf('org_a', 1, 'draft:1'))).toBe(draft);
  expect(sets.compiledOf(setOf('org_a', 1, 'draft:2')).variant).toBe('draft:2');
  expect(sets.size).toBe(2);
});
