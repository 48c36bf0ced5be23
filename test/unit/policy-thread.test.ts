import { compilePolicies } from '../../domain/policy/compile-policies';
import { evaluatePolicies } from '../../domain/policy/evaluate-policies';
import { contextOf, type OffLoopEvaluation, type PlainContext } from '../../domain/policy/evaluation-runner';
import type { Action, PolicySet, Rule } from '../../domain/policy/policy';
import { PolicyThread } from '../../infra/policy/policy-thread';
import { testPolicy } from '../support/test-policy';

/** The policy thread (infra/policy/policy-thread.ts): a real worker thread, started by each test's PolicyThread. */
let seq = 0;
const policy = (rules: Rule[]) => testPolicy(rules, { id: `pol_${++seq}`, name: `policy ${seq}` });

/** Each set a version of its own: the thread keeps what it compiled by org and policy_version. */
let versions = 100;
const setOf = (rules: Rule[][], policyVersion = ++versions): PolicySet => ({
  orgId: 'org_1',
  policyVersion,
  policies: rules.map(policy),
});

const action = (content: string): Action => ({
  type: 'llm.invoke',
  model: 'gpt-4o',
  messages: [{ role: 'user', content }],
  maxTokens: 100,
  estimatedCostUsd: 0.01,
});

const context: PlainContext = { agentId: 'agt_1', sessionId: 'ses_1' };
/** $10 per million input tokens: 20,000 bytes of prompt are worth $0.2 at worst. */
const costBasis = { price: { inputMicrosPerMtok: 10_000_000, outputMicrosPerMtok: 10_000_000 } };

/** An accepted pattern that never matches a run of `a` and takes long to find out (about 0.5-1.5 s here). */
const SLOW = [{ type: 'deny_pattern' as const, pattern: '(?:\\w*a){400}[^\\w]' }];
const slowAction = action('a'.repeat(24_000));

const warnings: string[] = [];
let thread: PolicyThread;
const start = (limitMs?: number) => {
  thread = new PolicyThread((message) => void warnings.push(message), limitMs);
  return thread;
};
afterEach(async () => {
  await thread.close();
  warnings.length = 0;
});

/** The same evaluation on this event loop, for comparison. */
const here = ({ set, action: a, context: c }: OffLoopEvaluation) =>
  evaluatePolicies(compilePolicies(set), a, contextOf(c, a));

it('decides as the engine on the event loop does: a denied pattern, a redaction, its new price', async () => {
  start();
  const cases: OffLoopEvaluation[] = [
    { set: setOf([[{ type: 'deny_pattern', pattern: 'sk-[a-z]+' }]]), action: action('key sk-abc'), context },
    {
      set: setOf([[{ type: 'redact_pattern', pattern: '\\d{4}', replacement: '#' }]]),
      action: action('card 4111 1111'),
      context,
    },
    {
      // The redaction lengthens the prompt past the cost cap: priced again from the cost basis, denied.
      set: setOf([
        [{ type: 'redact_pattern', pattern: '\\d{4}', replacement: 'Z'.repeat(5_000) }],
        [{ type: 'max_cost_per_call_usd', limit: 0.05 }],
      ]),
      action: action('card 4111 1111 1111 1111'),
      context: { ...context, costBasis },
    },
  ];
  const decisions = [];
  for (const evaluation of cases) {
    const { decision, ms } = await thread.evaluate(evaluation);
    expect(decision).toEqual(here(evaluation));
    expect(ms).toBeGreaterThanOrEqual(0);
    decisions.push(decision);
  }
  expect(decisions.map((d) => [d.verdict, d.reasons.map((r) => r.code)])).toEqual([
    ['deny', ['pattern_denied']],
    ['modify', ['redacted']],
    ['deny', ['cost_per_call_exceeded']],
  ]);
});

it('keeps the event loop free while a slow evaluation runs, and says how long it took there', async () => {
  start();
  await thread.evaluate({ set: setOf([[]]), action: action('warm'), context }); // the thread is up
  let lastTick = performance.now();
  let worstLag = 0;
  const ticks = setInterval(() => {
    const now = performance.now();
    worstLag = Math.max(worstLag, now - lastTick);
    lastTick = now;
  }, 10);
  try {
    const { decision, ms } = await thread.evaluate({ set: setOf([SLOW]), action: slowAction, context });
    expect(decision.verdict).toBe('allow');
    // On the event loop, the loop would have stood still for all of `ms`.
    expect(ms).toBeGreaterThan(150);
    expect(worstLag).toBeLessThan(ms / 2);
  } finally {
    clearInterval(ticks);
  }
});

it('denies an evaluation that outlives its limit, says so, and starts a new thread for the next', async () => {
  start(100);
  const { decision } = await thread.evaluate({ set: setOf([SLOW], 7), action: slowAction, context });
  expect(decision).toMatchObject({
    verdict: 'deny',
    reasons: [{ policyId: null, code: 'policy_evaluation_failed' }],
    modifiedAction: null,
    policyVersion: 7,
  });
  expect(decision.reasons[0]?.message).toContain('took more than 100 ms');
  expect(warnings).toEqual(['a policy evaluation was abandoned in its thread; it was denied']);
  const next = await thread.evaluate({
    set: setOf([[{ type: 'deny_pattern', pattern: 'sk-' }]]),
    action: action('sk-1'),
    context,
  });
  expect(next.decision.verdict).toBe('deny');
  expect(next.decision.reasons.map((r) => r.code)).toEqual(['pattern_denied']);
});

it('lets orgs take turns: one asking for many has one evaluated per round', async () => {
  start();
  await thread.evaluate({ set: setOf([[]]), action: action('warm'), context }); // the thread is up
  const setFor = (orgId: string): PolicySet => ({ ...setOf([[]]), orgId });
  const answered: string[] = [];
  const ask = (orgId: string, n: number) =>
    thread
      .evaluate({ set: setFor(orgId), action: action('hello'), context })
      .then(() => void answered.push(`${orgId}#${n}`));
  // org_a's first is sent at once; of the rest, org_a's turn came first (its second asked before
  // org_b's), then org_b's, and only then org_a's third: not all of org_a's before org_b's.
  await Promise.all([ask('org_a', 1), ask('org_a', 2), ask('org_a', 3), ask('org_b', 1)]);
  expect(answered).toEqual(['org_a#1', 'org_a#2', 'org_b#1', 'org_a#3']);
});

it("runs evaluations one at a time in the order asked, each with its own org's version", async () => {
  start();
  const older = setOf([[{ type: 'deny_pattern', pattern: 'one' }]], 1);
  const newer = setOf([[{ type: 'deny_pattern', pattern: 'two' }]], 2);
  const answers = await Promise.all([
    thread.evaluate({ set: older, action: action('one'), context }),
    thread.evaluate({ set: newer, action: action('one'), context }),
    thread.evaluate({ set: older, action: action('two'), context }),
  ]);
  expect(answers.map((a) => [a.decision.verdict, a.decision.policyVersion])).toEqual([
    ['deny', 1],
    ['allow', 2],
    ['allow', 1],
  ]);
});

it("keeps a preview's drafted set apart from the org's stored set of the same version, and each draft apart", async () => {
  start();
  const stored = setOf([[{ type: 'deny_pattern', pattern: 'one' }]]);
  const drafted = (pattern: string, variant: string): PolicySet => ({
    ...stored,
    variant,
    policies: [...stored.policies, policy([{ type: 'deny_pattern', pattern }])],
  });
  const verdicts = [];
  for (const set of [stored, drafted('two', 'draft:a'), stored, drafted('three', 'draft:b'), stored])
    verdicts.push((await thread.evaluate({ set, action: action('two three'), context })).decision.verdict);
  expect(verdicts).toEqual(['allow', 'deny', 'allow', 'deny', 'allow']);
});

it('rejects what is not answered when it is closed, and what comes after: the jobs are decided again elsewhere', async () => {
  start();
  const stopped = 'the process is stopping: the policy evaluation was not run';
  const unanswered = [
    thread.evaluate({ set: setOf([SLOW]), action: slowAction, context }),
    thread.evaluate({ set: setOf([[]]), action: action('hello'), context }),
  ].map((answer) => expect(answer).rejects.toThrow(stopped));
  await thread.close();
  await Promise.all(unanswered);
  await expect(thread.evaluate({ set: setOf([[]]), action: action('hello'), context })).rejects.toThrow(
    stopped,
  );
});

it('denies an evaluation that cannot be sent to the thread, alone: the next is evaluated', async () => {
  start();
  const uncopyable = { ...action('x'), tool: { name: 'f', arguments: () => 1 } } as unknown as Action;
  const { decision } = await thread.evaluate({ set: setOf([[]]), action: uncopyable, context });
  expect(decision.verdict).toBe('deny');
  expect(decision.reasons[0]?.message).toContain('could not be sent to its thread');
  const next = await thread.evaluate({
    set: setOf([[{ type: 'deny_pattern', pattern: 'sk-' }]]),
    action: action('sk-1'),
    context,
  });
  expect(next.decision.reasons.map((r) => r.code)).toEqual(['pattern_denied']);
});
