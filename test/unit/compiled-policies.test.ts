import { CompiledPolicies, type PolicySetReader } from '../../domain/policy/compiled-policies';
import type { PolicySet } from '../../domain/policy/policy';

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
