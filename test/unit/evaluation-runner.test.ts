import { OrgAtCapacity } from '../../domain/org-at-capacity';
import { compilePolicies } from '../../domain/policy/compile-policies';
import {
  EvaluationRunner,
  type OffLoopEvaluation,
  type OffLoopEvaluator,
} from '../../domain/policy/evaluation-runner';
import { EVALUATION_BURST_MS, EvaluationTime } from '../../domain/policy/evaluation-time';
import type { Action, PolicyDecision } from '../../domain/policy/policy';
import { testPolicy } from '../support/test-policy';

/** Which evaluations leave the event loop (evaluation-runner.ts), and what they are charged. */
const policy = (pattern: string) => testPolicy([{ type: 'deny_pattern', pattern }], { name: 'patterns' });
const compiled = (pattern: string) =>
  compilePolicies({ orgId: 'org_1', policyVersion: 3, policies: [policy(pattern)] });
const say = (content: string): Action => ({
  type: 'llm.invoke',
  model: 'm',
  messages: [{ role: 'user', content }],
  maxTokens: 10,
  estimatedCostUsd: 0.01,
});
/** Plain: a few thousand units of pattern work. Heavy: about 2.4 million (HEAVY_WORK is 2 million). */
const PLAIN = compiled('secret');
const HEAVY = compiled('(?:\\w*a){400}[^\\w]');
const context = {
  agentId: null,
  sessionId: null,
  costBasis: { price: { inputMicrosPerMtok: 1, outputMicrosPerMtok: 1 } },
};

/** A thread that answers what it is told and records what it was sent. */
function fakeThread(ms = 40) {
  const sent: OffLoopEvaluation[] = [];
  const decision: PolicyDecision = {
    verdict: 'deny',
    reasons: [
      { policyId: null, ruleIndex: null, code: 'policy_evaluation_failed', message: 'from the thread' },
    ],
    shadowReasons: [],
    modifiedAction: null,
    approval: null,
    policyVersion: 3,
  };
  const thread: OffLoopEvaluator = {
    evaluate: async (evaluation) => {
      sent.push(evaluation);
      return { decision, ms };
    },
  };
  return { thread, sent };
}

function setUp(ms?: number) {
  let now = 0;
  const time = new EvaluationTime(250, () => now);
  const { thread, sent } = fakeThread(ms);
  return {
    time,
    sent,
    runner: new EvaluationRunner(time, thread),
    advance: (by: number) => void (now += by),
  };
}

it('sends an evaluation that may be heavy to the thread, as data, and charges the time it took there', async () => {
  const { time, sent, runner } = setUp(1_200);
  const action = say('a'.repeat(2_000));
  const decision = await runner.evaluate(HEAVY, action, context, true);
  expect(decision.reasons[0]?.message).toBe('from the thread');
  expect(sent).toEqual([
    {
      set: { orgId: 'org_1', policyVersion: 3, policies: [policy('(?:\\w*a){400}[^\\w]')] },
      action,
      context,
    },
  ]);
  // 1,200 ms charged against a 1,000-ms burst: 200 ms in debt, 0.8 s at 250 ms a second.
  expect(time.waitMs('org_1')).toBe(800);
});

it('evaluates an ordinary one here: the thread is not asked', async () => {
  const { sent, runner } = setUp();
  const decision = await runner.evaluate(PLAIN, say('my secret'), context, true);
  expect(decision.reasons.map((r) => r.code)).toEqual(['pattern_denied']);
  expect(sent).toEqual([]);
});

it('puts a deferrable heavy one back while its org is in debt, before sending it; one that cannot wait goes', async () => {
  const { time, sent, runner, advance } = setUp();
  time.charge('org_1', EVALUATION_BURST_MS + 500);
  const action = say('a'.repeat(2_000));
  await expect(runner.evaluate(HEAVY, action, context, true)).rejects.toBeInstanceOf(OrgAtCapacity);
  expect(sent).toEqual([]);
  await runner.evaluate(HEAVY, action, context, false);
  expect(sent).toHaveLength(1);
  advance(10_000);
  await runner.evaluate(HEAVY, action, context, true);
  expect(sent).toHaveLength(2);
});

it('without a thread, evaluates even a heavy one here', async () => {
  const runner = new EvaluationRunner(new EvaluationTime(250), null);
  const decision = await runner.evaluate(HEAVY, say('a'.repeat(2_000)), context, true);
  expect(decision.verdict).toBe('allow');
});

it("sends one heavy evaluation of an org at a time: the org's next deferrable one waits its turn, another org's goes", async () => {
  const sent: string[] = [];
  const pending: (() => void)[] = [];
  /** The thread answers everything sent so far. */
  const answer = () => pending.splice(0).forEach((resolve) => resolve());
  const thread: OffLoopEvaluator = {
    evaluate: (evaluation) =>
      new Promise((resolve) => {
        sent.push(evaluation.set.orgId);
        pending.push(() => resolve({ decision: {} as PolicyDecision, ms: 1 }));
      }),
  };
  const runner = new EvaluationRunner(new EvaluationTime(250), thread);
  const action = say('a'.repeat(2_000));
  const other = compilePolicies({
    orgId: 'org_2',
    policyVersion: 1,
    policies: [{ ...policy('(?:\\w*a){400}[^\\w]'), orgId: 'org_2' }],
  });
  const first = runner.evaluate(HEAVY, action, context, true);
  const refused = await runner.evaluate(HEAVY, action, context, true).catch((err: unknown) => err);
  expect(refused).toBeInstanceOf(OrgAtCapacity);
  expect(await (refused as OrgAtCapacity).owed()).toBe(false);
  // One that cannot wait (a retry, an approved run: it holds a reservation) still goes.
  const atOnce = runner.evaluate(HEAVY, action, context, false);
  const otherOrg = runner.evaluate(other, action, context, true);
  await new Promise((r) => setImmediate(r));
  expect(sent).toEqual(['org_1', 'org_1', 'org_2']);
  answer();
  await Promise.all([first, atOnce, otherOrg]);
  expect(await (refused as OrgAtCapacity).owed()).toBe(true);
  const next = runner.evaluate(HEAVY, action, context, true);
  await new Promise((r) => setImmediate(r));
  expect(sent).toHaveLength(4);
  answer();
  await next;
});

it("replays a preview's evaluation outside the org's share: heavy ones in the thread, nothing charged", async () => {
  const { time, sent, runner } = setUp(1_200);
  time.charge('org_1', EVALUATION_BURST_MS + 500); // in debt: an invoke would wait, a preview does not
  const decision = await runner.replay(HEAVY, say('a'.repeat(2_000)), context);
  expect(decision.reasons[0]?.message).toBe('from the thread');
  expect((await runner.replay(PLAIN, say('my secret'), context)).verdict).toBe('deny');
  expect(sent).toHaveLength(1);
  expect(time.waitMs('org_1')).toBe(2_000); // the 500 ms owed at 250 ms a second, no more
});
