import fc from 'fast-check';
import { compilePolicies, type CompiledPolicySet } from '../../domain/policy/compile-policies';
import { evaluatePolicies } from '../../domain/policy/evaluate-policies';
import type { Action, Policy, Rule } from '../../domain/policy/policy';
import type { Verdict } from '../../domain/policy/verdict';

let seq = 0;
const policy = (rules: Rule[], over: Partial<Policy> = {}): Policy => ({
  id: `pol_${String(++seq).padStart(4, '0')}`,
  orgId: 'org_1',
  name: `p${seq}`,
  description: null,
  enabled: true,
  priority: 0,
  mode: 'enforce',
  appliesTo: {},
  rules,
  version: 1,
  createdAt: new Date(0),
  updatedAt: new Date(0),
  ...over,
});

const action = (over: Partial<Action> = {}): Action => ({
  type: 'llm.invoke',
  model: 'gpt-4o',
  messages: [
    { role: 'system', content: 'you are helpful' },
    { role: 'user', content: 'my card is 4111-1111-1111-1111' },
  ],
  maxTokens: 500,
  estimatedCostUsd: 0.02,
  ...over,
});

const context = { agentId: 'agt_1', sessionId: 'ses_1' };
const decide = (policies: Policy[], a: Action = action(), version = 4) =>
  evaluatePolicies(compilePolicies({ orgId: 'org_1', policyVersion: version, policies }), a, context);

/** One rule per verdict, each matching `action()`. */
const RULE_FOR: Record<Verdict, Rule | null> = {
  allow: null,
  modify: { type: 'max_tokens', limit: 100 },
  require_approval: { type: 'require_approval', when: {}, approversRequired: 1, timeoutSeconds: 60 },
  deny: { type: 'deny_models', models: ['gpt-4o'] },
};
const RANK: Verdict[] = ['allow', 'modify', 'require_approval', 'deny'];

describe('the policy engine, rule by rule', () => {
  it('allows when no policy has anything to say, with no reasons', () => {
    expect(decide([])).toMatchObject({
      verdict: 'allow',
      reasons: [],
      modifiedAction: null,
      policyVersion: 4,
    });
  });

  it('deny_models denies a listed model, naming the policy, rule and code', () => {
    const p = policy([
      { type: 'deny_tools', tools: ['x'] },
      { type: 'deny_models', models: ['gpt-4o'] },
    ]);
    expect(decide([p])).toMatchObject({
      verdict: 'deny',
      reasons: [{ policyId: p.id, ruleIndex: 1, code: 'model_denied' }],
    });
    expect(decide([p], action({ model: 'gpt-4o-mini' })).verdict).toBe('allow');
  });

  it('allow_models_only denies a model outside its list', () => {
    const p = policy([{ type: 'allow_models_only', models: ['gpt-4o-mini'] }]);
    expect(decide([p]).reasons[0]?.code).toBe('model_not_in_policy_allowlist');
    expect(decide([p], action({ model: 'gpt-4o-mini' })).verdict).toBe('allow');
  });

  it('deny_tools denies a listed tool, and says nothing of a call without a tool', () => {
    const p = policy([{ type: 'deny_tools', tools: ['shell'] }]);
    expect(decide([p], action({ tool: { name: 'shell', arguments: {} } })).reasons[0]?.code).toBe(
      'tool_denied',
    );
    expect(decide([p]).verdict).toBe('allow');
  });

  it('deny_pattern denies when any message matches, with flags', () => {
    const p = policy([{ type: 'deny_pattern', pattern: 'HELPFUL', flags: 'i' }]);
    expect(decide([p]).reasons[0]?.code).toBe('pattern_denied');
    expect(decide([policy([{ type: 'deny_pattern', pattern: 'HELPFUL' }])]).verdict).toBe('allow');
  });

  it('redact_pattern rewrites every message, taking the replacement literally', () => {
    const p = policy([{ type: 'redact_pattern', pattern: '\\d{4}', replacement: '$1#' }]);
    const a = action({
      messages: [
        { role: 'system', content: 'pin 1234' },
        { role: 'user', content: 'card 4111-1111' },
      ],
    });
    const d = decide([p], a);
    expect(d.verdict).toBe('modify');
    expect(d.reasons[0]?.code).toBe('redacted');
    expect(d.modifiedAction?.messages).toEqual([
      { role: 'system', content: 'pin $1#' },
      { role: 'user', content: 'card $1#-$1#' },
    ]);
  });

  it('max_tokens clamps down and never raises a limit', () => {
    expect(decide([policy([{ type: 'max_tokens', limit: 100 }])]).modifiedAction?.maxTokens).toBe(100);
    const within = decide([policy([{ type: 'max_tokens', limit: 1000 }])]);
    expect(within).toMatchObject({ verdict: 'allow', modifiedAction: null });
    const two = decide([
      policy([{ type: 'max_tokens', limit: 300 }]),
      policy([{ type: 'max_tokens', limit: 200 }]),
    ]);
    expect(two.modifiedAction?.maxTokens).toBe(200);
  });

  it('max_cost_per_call_usd denies an estimate over the limit, and an llm.invoke without one', () => {
    expect(decide([policy([{ type: 'max_cost_per_call_usd', limit: 0.01 }])]).reasons[0]?.code).toBe(
      'cost_per_call_exceeded',
    );
    expect(decide([policy([{ type: 'max_cost_per_call_usd', limit: 0.05 }])]).verdict).toBe('allow');
    const unknown = action();
    delete unknown.estimatedCostUsd;
    expect(decide([policy([{ type: 'max_cost_per_call_usd', limit: 1 }])], unknown).reasons[0]?.code).toBe(
      'cost_unknown',
    );
  });

  it('require_approval asks when every listed condition holds, the strictest requirement wins', () => {
    const a = policy([
      { type: 'require_approval', when: { models: ['gpt-4o'] }, approversRequired: 2, timeoutSeconds: 600 },
    ]);
    const b = policy([
      {
        type: 'require_approval',
        when: { minEstimatedCostUsd: 0.01 },
        approversRequired: 1,
        timeoutSeconds: 60,
      },
    ]);
    const d = decide([a, b]);
    expect(d.verdict).toBe('require_approval');
    expect(d.approval).toMatchObject({ approversRequired: 2, timeoutSeconds: 60 });
    const cheap = policy([
      {
        type: 'require_approval',
        when: { minEstimatedCostUsd: 1 },
        approversRequired: 1,
        timeoutSeconds: 60,
      },
    ]);
    expect(decide([cheap]).verdict).toBe('allow');
  });
});

describe('precedence: deny > require_approval > modify > allow', () => {
  const pairs = RANK.flatMap((a) => RANK.map((b) => [a, b] as const));
  it.each(pairs)('%s with %s gives the stronger', (a, b) => {
    const policies = [a, b].flatMap((v) => (RULE_FOR[v] ? [policy([RULE_FOR[v] as Rule])] : []));
    const expected = RANK[Math.max(RANK.indexOf(a), RANK.indexOf(b))];
    const d = decide(policies);
    expect(d.verdict).toBe(expected);
    expect(d.modifiedAction !== null).toBe(expected === 'modify');
  });
});

describe('applies_to', () => {
  const deny = RULE_FOR.deny as Rule;
  it.each([
    [{ agentIds: ['agt_1'] }, true],
    [{ agentIds: ['agt_2'] }, false],
    [{ models: ['gpt-4o'] }, true],
    [{ models: ['claude'] }, false],
    [{ actionTypes: ['llm.invoke'] }, true],
    [{ actionTypes: ['tool.call'] }, false],
    [{ tools: ['shell'] }, false], // the action has no tool
    [{ agentIds: ['agt_1'], models: ['claude'] }, false], // every dimension must match
  ])('%j applies: %s', (appliesTo, applies) => {
    expect(decide([policy([deny], { appliesTo })]).verdict).toBe(applies ? 'deny' : 'allow');
  });

  it('skips a disabled policy', () => {
    expect(decide([policy([deny], { enabled: false })]).verdict).toBe('allow');
  });
});

describe('shadow mode and failing closed', () => {
  it('a shadow policy never changes the verdict, and records what it would have decided', () => {
    const shadow = policy([RULE_FOR.deny as Rule, RULE_FOR.modify as Rule], { mode: 'shadow' });
    const d = decide([shadow]);
    expect(d).toMatchObject({ verdict: 'allow', reasons: [], modifiedAction: null });
    expect(d.shadowReasons).toEqual([
      expect.objectContaining({ policyId: shadow.id, ruleIndex: 0, code: 'model_denied', verdict: 'deny' }),
      expect.objectContaining({
        policyId: shadow.id,
        ruleIndex: 1,
        code: 'max_tokens_clamped',
        verdict: 'modify',
      }),
    ]);
  });

  it('denies, naming the policy, when evaluating it throws', () => {
    const p = policy([{ type: 'deny_pattern', pattern: 'x' }]);
    const compiled: CompiledPolicySet = compilePolicies({ orgId: 'org_1', policyVersion: 1, policies: [p] });
    const rule = compiled.policies[0]?.rules[0];
    if (!rule) throw new Error('no rule');
    rule.regex = {
      matcher: () => {
        throw new Error('engine exploded');
      },
    } as never;
    const d = evaluatePolicies(compiled, action(), context);
    expect(d.verdict).toBe('deny');
    expect(d.reasons[0]).toMatchObject({ policyId: p.id, code: 'policy_evaluation_failed' });
  });

  it('denies a policy whose pattern does not compile (defence behind the store)', () => {
    const p = policy([{ type: 'deny_pattern', pattern: '(a' }]);
    expect(decide([p]).reasons[0]).toMatchObject({ policyId: p.id, code: 'policy_evaluation_failed' });
  });

  it('evaluates a catastrophic pattern in linear time, on a short and on a 100,000-character input', () => {
    const p = policy([{ type: 'deny_pattern', pattern: '(a+)+$' }]);
    const short = action({ messages: [{ role: 'user', content: `${'a'.repeat(30)}!` }] });
    expect(decide([p], short).verdict).toBe('allow');
    const long = action({ messages: [{ role: 'user', content: `${'a'.repeat(100_000)}!` }] });
    expect(decide([p], long).verdict).toBe('allow');
  });
});

describe('properties (fast-check, seeded)', () => {
  const models = ['m1', 'm2', 'm3'];
  const tools = ['t1', 't2'];
  const ruleArb: fc.Arbitrary<Rule> = fc.oneof(
    fc.record({ type: fc.constant('deny_models' as const), models: fc.subarray(models, { minLength: 1 }) }),
    fc.record({
      type: fc.constant('allow_models_only' as const),
      models: fc.subarray(models, { minLength: 1 }),
    }),
    fc.record({ type: fc.constant('deny_tools' as const), tools: fc.subarray(tools, { minLength: 1 }) }),
    fc.record({
      type: fc.constant('deny_pattern' as const),
      pattern: fc.constantFrom('secret', 'x+y', '^hi'),
    }),
    fc.record({
      type: fc.constant('redact_pattern' as const),
      pattern: fc.constantFrom('secret', '\\d+'),
      replacement: fc.constant('[r]'),
    }),
    fc.record({ type: fc.constant('max_tokens' as const), limit: fc.integer({ min: 1, max: 1000 }) }),
    fc.record({
      type: fc.constant('max_cost_per_call_usd' as const),
      limit: fc.double({ min: 0.001, max: 1, noNaN: true }),
    }),
    fc.record({
      type: fc.constant('require_approval' as const),
      when: fc.record({ models: fc.subarray(models, { minLength: 1 }) }, { requiredKeys: [] }),
      approversRequired: fc.integer({ min: 1, max: 3 }),
      timeoutSeconds: fc.integer({ min: 1, max: 604800 }),
    }),
  );
  const policyArb = fc.record({
    rules: fc.array(ruleArb, { minLength: 1, maxLength: 4 }),
    priority: fc.integer({ min: -5, max: 5 }),
    models: fc.option(fc.subarray(models, { minLength: 1 }), { nil: undefined }),
  });
  const actionArb = fc.record({
    model: fc.constantFrom(...models),
    tool: fc.option(fc.constantFrom(...tools), { nil: undefined }),
    text: fc.constantFrom('hi there', 'a secret 42', 'x+yyy', 'plain'),
    maxTokens: fc.integer({ min: 1, max: 2000 }),
    cost: fc.double({ min: 0, max: 2, noNaN: true }),
  });
  type Draft = { rules: Rule[]; priority: number; models: string[] | undefined };
  const toPolicies = (drafts: Draft[], mode: 'enforce' | 'shadow') =>
    drafts.map((d) =>
      policy(d.rules, { priority: d.priority, mode, appliesTo: d.models ? { models: d.models } : {} }),
    );
  const toAction = (a: {
    model: string;
    tool?: string | undefined;
    text: string;
    maxTokens: number;
    cost: number;
  }) =>
    action({
      model: a.model,
      messages: [{ role: 'user', content: a.text }],
      maxTokens: a.maxTokens,
      estimatedCostUsd: a.cost,
      ...(a.tool ? { tool: { name: a.tool, arguments: {} } } : {}),
    });

  /** An independent oracle: the verdict each rule alone would give, the strongest of them. */
  function oracle(policies: Policy[], a: Action): Verdict {
    const single = policies.flatMap((p) =>
      p.rules.map((r) => decide([policy([r], { appliesTo: p.appliesTo })], a).verdict),
    );
    return single.reduce<Verdict>((v, s) => (RANK.indexOf(s) > RANK.indexOf(v) ? s : v), 'allow');
  }

  it('the verdict is the strongest verdict of the enforced rules that match', () => {
    fc.assert(
      fc.property(fc.array(policyArb, { maxLength: 5 }), actionArb, (drafts, a) => {
        const policies = toPolicies(drafts, 'enforce');
        const act = toAction(a);
        expect(decide(policies, act).verdict).toBe(oracle(policies, act));
      }),
      { seed: 20261123, numRuns: 300 },
    );
  });

  it('adding shadow policies never changes a verdict or the modified action', () => {
    fc.assert(
      fc.property(
        fc.array(policyArb, { maxLength: 4 }),
        fc.array(policyArb, { maxLength: 4 }),
        actionArb,
        (e, s, a) => {
          const enforced = toPolicies(e, 'enforce');
          const act = toAction(a);
          const before = decide(enforced, act);
          const after = decide([...enforced, ...toPolicies(s, 'shadow')], act);
          expect(after.verdict).toBe(before.verdict);
          expect(after.reasons).toEqual(before.reasons);
          expect(after.modifiedAction).toEqual(before.modifiedAction);
        },
      ),
      { seed: 20261124, numRuns: 300 },
    );
  });
});
