import { CompiledPolicies, type PolicySetReader } from '../../domain/policy/compiled-policies';
import {
  compiledWeight,
  compilePolicies,
  compilePolicyInTurns,
  withCompiled,
} from '../../domain/policy/compile-policies';
import { listItemsOf, listWeightOf } from '../../domain/policy/limits';
import type { PolicySet } from '../../domain/policy/policy';
import { testPolicy } from '../support/test-policy';

/** A reader over one org whose version a test moves, counting what it is asked. */
function fakeReader() {
  const state = { version: 1, versionReads: 0, loads: 0 };
  const reader: PolicySetReader = {
    policyVersion: async () => {
      state.versionReads++;
      return state.version;
    },
    loadPolicySet: async (orgId): Promise<PolicySet> => {
      state.loads++;
      return { orgId, policyVersion: state.version, policies: [] };
    },
  };
  return { state, reader };
}

function setUp() {
  const { state, reader } = fakeReader();
  let now = 0;
  const clock = { now: () => new Date(now) };
  const compiled: number[] = [];
  const cache = new CompiledPolicies(reader, (set) => compiled.push(set.policyVersion), clock);
  return { state, cache, compiled, advance: (ms: number) => (now += ms) };
}

describe('the compiled policy cache', () => {
  it('compiles a version once, and reads the version again only after a second', async () => {
    const { state, cache, compiled, advance } = setUp();
    await cache.forOrg('org_1');
    await cache.forOrg('org_1');
    advance(999);
    await cache.forOrg('org_1');
    expect(state.versionReads).toBe(1);
    advance(2);
    await cache.forOrg('org_1');
    expect(state.versionReads).toBe(2);
    expect(compiled).toEqual([1]);
  });

  it('sees a change within a second, and compiles the new version once', async () => {
    const { state, cache, compiled, advance } = setUp();
    expect((await cache.forOrg('org_1')).version).toBe(1);
    state.version = 2;
    advance(1000);
    expect((await cache.forOrg('org_1')).version).toBe(2);
    expect((await cache.forOrg('org_1')).version).toBe(2);
    expect(compiled).toEqual([1, 2]);
  });

  it('does not answer a caller that knows a newer version with a load of an older one under way', async () => {
    const { state, reader } = fakeReader();
    let release = () => {};
    const slowFirst: PolicySetReader = {
      ...reader,
      loadPolicySet: async (orgId) => {
        const set = await reader.loadPolicySet(orgId);
        if (state.loads === 1) await new Promise<void>((resolve) => (release = resolve));
        return set;
      },
    };
    const cache = new CompiledPolicies(slowFirst, compilePolicies, { now: () => new Date(0) });
    const first = cache.forOrg('org_1'); // reads version 1, then waits
    await new Promise((resolve) => setImmediate(resolve));
    state.version = 2; // a change commits meanwhile; a caller learns of it
    const knowing = cache.forOrg('org_1', 2);
    release();
    expect((await first).version).toBe(1);
    expect((await knowing).version).toBe(2);
  });

  it('reloads at once when the caller already knows a newer version, without reading it', async () => {
    const { state, cache } = setUp();
    await cache.forOrg('org_1');
    state.version = 5;
    expect((await cache.forOrg('org_1', 5)).version).toBe(5);
    expect(state.versionReads).toBe(1);
  });

  it('loads once for a burst of callers after a change', async () => {
    const { state, cache } = setUp();
    await Promise.all(Array.from({ length: 20 }, () => cache.forOrg('org_1', 1)));
    expect(state.loads).toBe(1);
  });
});

describe('the compiled policy cache under a budget', () => {
  /** Sets that weigh what their org's name says (`org_w40` weighs 40). */
  function weighed(budget: number) {
    const { state, reader } = fakeReader();
    const compiles: string[] = [];
    const compile = (set: PolicySet) => (compiles.push(set.orgId), Number(set.orgId.split('_w')[1]));
    const cache = new CompiledPolicies(
      reader,
      compile,
      { now: () => new Date(0) },
      { weigh: (w) => w, budget },
    );
    return { state, cache, compiles };
  }

  it('lets the set used longest ago go once the sets kept weigh more than the budget', async () => {
    const { cache, compiles } = weighed(100);
    await cache.forOrg('a_w40', 1);
    await cache.forOrg('b_w40', 1);
    await cache.forOrg('a_w40', 1); // used again: now b's is the oldest
    await cache.forOrg('c_w40', 1);
    expect(cache.kept).toEqual({ sets: 2, weight: 80 });
    await cache.forOrg('a_w40', 1);
    expect(compiles).toEqual(['a_w40', 'b_w40', 'c_w40']);
    await cache.forOrg('b_w40', 1); // let go: compiled again
    expect(compiles).toEqual(['a_w40', 'b_w40', 'c_w40', 'b_w40']);
  });

  it('keeps the set in use even when it alone weighs more than the budget, and counts a new version once', async () => {
    const { state, cache } = weighed(100);
    await cache.forOrg('a_w40', 1);
    await cache.forOrg('big_w500', 1);
    expect(cache.kept).toEqual({ sets: 1, weight: 500 });
    state.version = 2;
    await cache.forOrg('big_w500', 2);
    expect(cache.kept).toEqual({ sets: 1, weight: 500 });
  });
});

it("weighs a compiled set by its patterns' instructions and its rules", () => {
  const set = compilePolicies({
    orgId: 'org_1',
    policyVersion: 1,
    policies: [
      testPolicy([
        { type: 'deny_pattern', pattern: '(?:\\w*a){400}[^\\w]' },
        { type: 'max_tokens', limit: 5 },
      ]),
    ],
  });
  expect(compiledWeight(set)).toBe(1_203 + 2);
});

it("weighs a compiled set's list items too, applies_to's and require_approval's included (QA: 300 MB an org)", () => {
  const policy = testPolicy(
    [
      { type: 'deny_tools', tools: ['a', 'b', 'c'] },
      {
        type: 'require_approval',
        when: { models: ['m'], tools: ['x', 'y'] },
        approversRequired: 1,
        timeoutSeconds: 60,
      },
    ],
    { appliesTo: { models: ['gpt-4o'], tools: ['t1', 't2', 't3', 't4'] } },
  );
  expect(listItemsOf(policy)).toBe(3 + 3 + 5);
  const set = compilePolicies({ orgId: 'org_1', policyVersion: 1, policies: [policy] });
  expect(compiledWeight(set)).toBe(2 + 11);
  // A long name weighs more: one more unit per 50 characters (QA: 367 bytes an item of 100).
  const long = testPolicy([
    { type: 'deny_tools', tools: ['ｔ'.padEnd(100, 'Ａ'), 'x'.repeat(49), 'y'.repeat(50)] },
  ]);
  expect(listWeightOf(long)).toBe(3 + 1 + 2);
  expect(compiledWeight(compilePolicies({ orgId: 'org_1', policyVersion: 1, policies: [long] }))).toBe(1 + 6);
});

it('adds one compiled policy to a compiled set in evaluation order, as a named variant (the preview draft)', async () => {
  const policy = (id: string, priority: number, enabled = true) =>
    testPolicy([{ type: 'max_tokens', limit: 5 }], { id, name: id, priority, enabled });
  const stored = [policy('pol_b', 5), policy('pol_a', 1), policy('pol_c', 5)];
  const current = compilePolicies({ orgId: 'org_1', policyVersion: 1, policies: stored });
  const draft = await compilePolicyInTurns(policy('pol_draft', 5), async () => {});
  const order = (set: typeof current) => set.policies.map((p) => p.policy.id);
  const drafted = withCompiled(current, draft, 'draft:1');
  expect(order(drafted)).toEqual(
    order(compilePolicies({ orgId: 'org_1', policyVersion: 1, policies: [...stored, draft.policy] })),
  );
  expect(order(drafted)).toEqual(['pol_b', 'pol_c', 'pol_draft', 'pol_a']);
  expect(drafted.variant).toBe('draft:1');
  expect(current.variant).toBeUndefined();
  const off = await compilePolicyInTurns(policy('pol_off', 9, false), async () => {});
  expect(withCompiled(current, off, 'draft:2')).toBe(current);
});

it('compiles a policy a rule at a time, letting other work run between its rules', async () => {
  const rules = [
    { type: 'deny_pattern' as const, pattern: 'a+b' },
    { type: 'max_tokens' as const, limit: 5 },
    { type: 'redact_pattern' as const, pattern: 'c+d', replacement: 'x' },
  ];
  const seen: number[] = [];
  const compiled = await compilePolicyInTurns(testPolicy(rules), async () => {
    seen.push(seen.length);
  });
  expect(seen).toEqual([0, 1, 2]);
  expect(compiled.rules.map((r) => r.regex !== null)).toEqual([true, false, true]);
  expect(compiled).toEqual(
    compilePolicies({ orgId: 'org_1', policyVersion: 1, policies: [testPolicy(rules)] }).policies[0],
  );
  const broken = await compilePolicyInTurns(
    testPolicy([{ type: 'deny_pattern', pattern: '(' }]),
    async () => {},
  );
  expect(broken.error).toMatch(/^rule 0: /);
});
