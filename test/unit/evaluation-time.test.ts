import { OrgAtCapacity } from '../../domain/org-at-capacity';
import { compilePolicies } from '../../domain/policy/compile-policies';
import { HEAVY_WORK } from '../../domain/policy/evaluation-runner';
import { EVALUATION_BURST_MS, EvaluationTime } from '../../domain/policy/evaluation-time';
import { worstPatternWork } from '../../domain/policy/pattern-budget';
import type { Action } from '../../domain/policy/policy';
import { testPolicy } from '../support/test-policy';

/** Whether the evaluation's job can wait (`deferrable`). */
const DEFER = true;
const AT_ONCE = false;

/** A clock the test moves by hand, and evaluations that take as long as they say. */
function fakeTime(msPerSecond = 250) {
  let now = 0;
  const time = new EvaluationTime(msPerSecond, () => now);
  const taking = (ms: number) => () => {
    now += ms;
    return ms;
  };
  return { time, taking, advance: (ms: number) => void (now += ms) };
}

/** The OrgAtCapacity `run` threw, or null when it evaluated. */
function refusal(run: () => unknown): OrgAtCapacity | null {
  try {
    run();
    return null;
  } catch (err) {
    if (err instanceof OrgAtCapacity) return err;
    throw err;
  }
}

describe("an org's share of evaluation time", () => {
  it('lets an org spend its burst at once, then makes it wait until its balance refills to 0', () => {
    const { time, taking, advance } = fakeTime(250);
    expect(time.waitMs('org_a')).toBe(0);
    expect(time.run('org_a', DEFER, taking(EVALUATION_BURST_MS))).toBe(EVALUATION_BURST_MS);
    // At 0 an evaluation still starts, however long it takes; its 400 ms earn back 100 meanwhile.
    time.run('org_a', DEFER, taking(400));
    // 300 ms in debt at 250 ms a second.
    expect(time.waitMs('org_a')).toBe(1_200);
    advance(600);
    expect(time.waitMs('org_a')).toBe(600);
    advance(600);
    expect(time.waitMs('org_a')).toBe(0);
  });

  it('refuses a deferrable evaluation in debt with OrgAtCapacity (a wait within 125 ms..4 s), evaluating nothing', () => {
    const { time, taking, advance } = fakeTime(100);
    time.run('org_a', DEFER, taking(EVALUATION_BURST_MS + 2_000));
    let evaluated = false;
    const refused = refusal(() => time.run('org_a', DEFER, () => (evaluated = true)));
    expect(refused?.delayMs).toBe(4_000); // 20 s owed, capped
    expect(refused?.message).toContain('policy evaluation time (100 ms a second)');
    expect(evaluated).toBe(false);
    advance(19_990);
    expect(refusal(() => time.run('org_a', DEFER, taking(1)))?.delayMs).toBe(125); // 100 ms owed, floored
    advance(100);
    expect(refusal(() => time.run('org_a', DEFER, taking(1)))).toBeNull();
  });

  it('tells a deferred job when its turn has come (owed)', async () => {
    const { time, taking, advance } = fakeTime(1_000);
    time.run('org_a', DEFER, taking(EVALUATION_BURST_MS + 300));
    const refused = refusal(() => time.run('org_a', DEFER, taking(1)));
    expect(await refused?.owed()).toBe(false);
    advance(300);
    expect(await refused?.owed()).toBe(true);
  });

  it('always evaluates what cannot wait (a retry or an approved run holding its reservation), and charges it', () => {
    const { time, taking } = fakeTime(250);
    time.run('org_a', DEFER, taking(EVALUATION_BURST_MS + 250));
    expect(time.run('org_a', AT_ONCE, taking(250))).toBe(250);
    // 250 owed, 250 more charged, 62.5 earned back during it: 437.5 ms at 250 ms a second.
    expect(time.waitMs('org_a')).toBe(1_750);
  });

  it("keeps orgs apart: one org's debt does not hold another", () => {
    const { time, taking } = fakeTime(250);
    time.run('org_a', DEFER, taking(EVALUATION_BURST_MS * 3));
    expect(time.waitMs('org_a')).toBeGreaterThan(0);
    expect(refusal(() => time.run('org_b', DEFER, taking(1)))).toBeNull();
  });

  it('charges an evaluation that threw, and forgets an org once its balance is full again', () => {
    const { time, advance } = fakeTime(1_000);
    const failing = () => {
      advance(EVALUATION_BURST_MS + 500);
      throw new Error('pattern past its budget');
    };
    expect(() => time.run('org_a', DEFER, failing)).toThrow('pattern past its budget');
    expect(time.waitMs('org_a')).toBe(500);
    expect(time.tracked).toBe(1);
    advance(EVALUATION_BURST_MS + 500);
    expect(time.waitMs('org_a')).toBe(0);
    expect(time.tracked).toBe(0);
  });
});

describe('what marks an evaluation that may be heavy', () => {
  const set = (patterns: string[]) =>
    compilePolicies({
      orgId: 'org_1',
      policyVersion: 1,
      policies: [testPolicy(patterns.map((pattern) => ({ type: 'deny_pattern' as const, pattern })))],
    });
  const say = (content: string): Action => ({ type: 'llm.invoke', messages: [{ role: 'user', content }] });

  it('is the most its patterns could scan: characters × (instructions + 20), before any runs', () => {
    expect(worstPatternWork(set([]), say('a'.repeat(1000)))).toBe(0);
    const plain = worstPatternWork(set(['secret']), say('a'.repeat(1000)));
    expect(plain).toBeGreaterThan(20_000);
    expect(plain).toBeLessThan(HEAVY_WORK);
    expect(worstPatternWork(set(['(?:\\w*a){400}[^\\w]']), say('a'.repeat(2_000)))).toBeGreaterThan(
      HEAVY_WORK,
    );
  });
});
