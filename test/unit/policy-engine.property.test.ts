import fc from 'fast-check';
import { compilePolicies } from '../../domain/policy/compile-policies';
import { evaluatePolicies } from '../../domain/policy/evaluate-policies';
import type { Action, AppliesTo, EvaluationContext, Policy, Rule } from '../../domain/policy/policy';
import type { Verdict } from '../../domain/policy/verdict';

/*
 * The engine against an oracle written independently of it: plain comparisons, and JavaScript's
 * RegExp on patterns where it and RE2 agree (ASCII, no backtracking hazard among them). Both judge
 * each rule on the action as given, then apply the matching redactions one after the other, in
 * evaluation order, to the text the previous ones left (replacements are literal text).
 */

const MODELS = ['m1', 'm2', 'm3'];
const TOOLS = ['t1', 't2'];
const AGENTS = ['agt_1', 'agt_2'];
const TYPES = ['llm.invoke', 'tool.call'];
const PATTERNS = ['secret', '\\d+', '^hi', 'x+y', '[aeiou]{2}', 'SECRET'];
const TEXTS = ['hi there', 'a secret 42', 'x+yyy xy', 'plain', 'AUDIO Secret', 'bee 7'];
const REPLACEMENTS = ['[r]', '$&', '$1', '$$', '\\', '${r}', ''];
const ORDER: Verdict[] = ['allow', 'modify', 'require_approval', 'deny'];

const sub = <T>(items: T[]) => fc.subarray(items, { minLength: 1 });
const opt = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });

/** Sometimes a value, mostly absent: `weight` to 1 against the value. */
const rarely = <T>(arb: fc.Arbitrary<T>, weight = 3) =>
  fc.oneof({ arbitrary: fc.constant(undefined), weight }, { arbitrary: arb, weight: 1 });

// Deny rules weigh less, so that every verdict level is decided often, not only deny.
const ruleArb: fc.Arbitrary<Rule> = fc.oneof(
  fc.record({ type: fc.constant('deny_models' as const), models: sub(MODELS) }),
  fc.record({ type: fc.constant('allow_models_only' as const), models: sub(MODELS) }),
  fc.record({ type: fc.constant('deny_tools' as const), tools: sub(TOOLS) }),
  fc.record(
    {
      type: fc.constant('deny_pattern' as const),
      pattern: fc.constantFrom(...PATTERNS),
      flags: fc.constantFrom('', 'i'),
    },
    { requiredKeys: ['type', 'pattern'] },
  ),
  {
    weight: 4,
    arbitrary: fc.record({
      type: fc.constant('redact_pattern' as const),
      pattern: fc.constantFrom(...PATTERNS),
      replacement: fc.constantFrom(...REPLACEMENTS),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      type: fc.constant('max_tokens' as const),
      limit: fc.integer({ min: 1, max: 2000 }),
    }),
  },
  fc.record({
    type: fc.constant('max_cost_per_call_usd' as const),
    limit: fc.constantFrom(0.01, 0.1, 0.5, 1),
  }),
  {
    weight: 4,
    arbitrary: fc.record({
      type: fc.constant('require_approval' as const),
      when: fc.record(
        { models: sub(MODELS), tools: sub(TOOLS), minEstimatedCostUsd: fc.constantFrom(0.01, 0.5) },
        { requiredKeys: [] },
      ),
      approversRequired: fc.integer({ min: 1, max: 3 }),
      timeoutSeconds: fc.integer({ min: 1, max: 604800 }),
    }),
  },
);

/** Each dimension mostly absent, so that policies often apply; an absent key is left out. */
const appliesToArb: fc.Arbitrary<AppliesTo> = fc
  .record({
    agentIds: rarely(sub(AGENTS)),
    models: rarely(sub(MODELS)),
    actionTypes: rarely(sub(TYPES)),
    tools: rarely(sub(TOOLS)),
  })
  .map((dims) => Object.fromEntries(Object.entries(dims).filter(([, v]) => v !== undefined)));

/** Policies with distinct ids; the caller picks the mode. */
const policiesArb = (mode: 'enforce' | 'shadow', prefix: string, maxLength: number) =>
  fc
    .array(
      fc.record({
        rules: fc.array(ruleArb, { minLength: 1, maxLength: 4 }),
        priority: fc.integer({ min: -2, max: 2 }),
        enabled: fc.oneof(
          { arbitrary: fc.constant(true), weight: 5 },
          { arbitrary: fc.constant(false), weight: 1 },
        ),
        appliesTo: appliesToArb,
      }),
      { maxLength },
    )
    .map((drafts) =>
      drafts.map((d, i): Policy => ({
        ...d,
        id: `pol_${prefix}${String(i).padStart(2, '0')}`,
        orgId: 'org_1',
        name: `${prefix}${i}`,
        description: null,
        mode,
        version: 1,
        createdAt: new Date(0),
        updatedAt: new Date(0),
      })),
    );

const actionArb: fc.Arbitrary<Action> = fc
  .record({
    type: fc.constantFrom(...TYPES),
    model: opt(fc.constantFrom(...MODELS)),
    texts: fc.array(fc.constantFrom(...TEXTS), { maxLength: 3 }),
    maxTokens: opt(fc.integer({ min: 1, max: 3000 })),
    tool: opt(fc.constantFrom(...TOOLS)),
    cost: opt(fc.constantFrom(0, 0.005, 0.01, 0.2, 0.5, 2)),
  })
  .map(({ type, model, texts, maxTokens, tool, cost }) => ({
    type,
    messages: texts.map((content) => ({ role: 'user' as const, content })),
    ...(model !== undefined ? { model } : {}),
    ...(maxTokens !== undefined ? { maxTokens } : {}),
    ...(tool !== undefined ? { tool: { name: tool, arguments: {} } } : {}),
    ...(cost !== undefined ? { estimatedCostUsd: cost } : {}),
  }));

const contextArb: fc.Arbitrary<EvaluationContext> = fc.record({
  agentId: fc.constantFrom('agt_1', 'agt_2', null),
  sessionId: fc.constant('ses_1'),
});

// ---- the oracle ----

const has = (list: string[] | undefined, value: string | null | undefined) =>
  list === undefined || (value != null && list.includes(value));

const applies = (p: Policy, a: Action, ctx: EvaluationContext) =>
  has(p.appliesTo.agentIds, ctx.agentId) &&
  has(p.appliesTo.models, a.model) &&
  has(p.appliesTo.actionTypes, a.type) &&
  has(p.appliesTo.tools, a.tool?.name);

const texts = (a: Action) => (a.messages ?? []).map((m) => m.content);

/** What one rule alone says of the action: its verdict and code, or null. */
function judge(rule: Rule, a: Action): { verdict: Verdict; code: string } | null {
  const say = (verdict: Verdict, code: string) => ({ verdict, code });
  switch (rule.type) {
    case 'deny_models':
      return a.model !== undefined && rule.models.includes(a.model) ? say('deny', 'model_denied') : null;
    case 'allow_models_only':
      if (a.model === undefined) return a.type === 'llm.invoke' ? say('deny', 'model_unknown') : null;
      return !rule.models.includes(a.model) ? say('deny', 'model_not_in_policy_allowlist') : null;
    case 'deny_tools':
      return a.tool !== undefined && rule.tools.includes(a.tool.name) ? say('deny', 'tool_denied') : null;
    case 'deny_pattern':
      return texts(a).some((t) => new RegExp(rule.pattern, rule.flags ?? '').test(t))
        ? say('deny', 'pattern_denied')
        : null;
    case 'redact_pattern':
      return texts(a).some((t) => new RegExp(rule.pattern).test(t)) ? say('modify', 'redacted') : null;
    case 'max_tokens':
      return a.maxTokens !== undefined && a.maxTokens > rule.limit
        ? say('modify', 'max_tokens_clamped')
        : null;
    case 'max_cost_per_call_usd':
      if (a.estimatedCostUsd === undefined)
        return a.type === 'llm.invoke' ? say('deny', 'cost_unknown') : null;
      return a.estimatedCostUsd > rule.limit ? say('deny', 'cost_per_call_exceeded') : null;
    case 'require_approval': {
      const { models, tools, minEstimatedCostUsd: min } = rule.when;
      const ok =
        has(models, a.model) &&
        has(tools, a.tool?.name) &&
        (min === undefined || a.estimatedCostUsd === undefined || a.estimatedCostUsd >= min);
      return ok ? say('require_approval', 'approval_required') : null;
    }
  }
}

interface Said {
  policy: Policy;
  /** The rule's index; null for a failure of the whole policy. */
  index: number | null;
  rule: Rule;
  verdict: Verdict;
  code: string;
}

/** Every rule that speaks, in evaluation order: priority (highest first), then id, then index. */
function said(policies: Policy[], a: Action, ctx: EvaluationContext): Said[] {
  const order = policies
    .filter((p) => p.enabled && applies(p, a, ctx))
    .sort((x, y) => y.priority - x.priority || (x.id < y.id ? -1 : 1));
  return order.flatMap((policy) =>
    policy.rules.flatMap((rule, index) => {
      const j = judge(rule, a);
      return j ? [{ policy, index, rule, ...j }] : [];
    }),
  );
}

/** The rules' modifications applied in order: redactions to the messages, clamps to max_tokens. */
/** The replacements of the redactions among `rules`. */
const keptOf = (rules: Said[]) =>
  rules.flatMap((s) => (s.rule.type === 'redact_pattern' ? [s.rule.replacement] : []));

/** `idle` gets the redactions that changed nothing. */
function applied(rules: Said[], a: Action, kept = keptOf(rules), idle = new Set<Said>()): Action {
  const out = { ...a };
  for (const s of rules) {
    const { rule } = s;
    const before = JSON.stringify(out.messages);
    if (rule.type === 'redact_pattern')
      out.messages = out.messages?.map((m) => ({ ...m, content: redactNew(rule, m.content, kept) }));
    if (rule.type === 'redact_pattern' && JSON.stringify(out.messages) === before) idle.add(s);
    if (rule.type === 'max_tokens' && out.maxTokens !== undefined)
      out.maxTokens = Math.min(out.maxTokens, rule.limit);
  }
  return out;
}

type Redact = Extract<Rule, { type: 'redact_pattern' }>;

/**
 * A redaction applied: every match but its own replacement and those inside one copy of one of
 * the redactions' replacements, short of all of it; after a match it leaves, the search goes on
 * from the next character (a longer match may start inside it).
 */
function redactNew(rule: Redact, text: string, kept: string[]): string {
  const copies: [number, number][] = [];
  for (const k of new Set([...kept, rule.replacement]))
    for (let at = k === '' ? -1 : text.indexOf(k); at !== -1; at = text.indexOf(k, at + 1))
      copies.push([at, at + k.length]);
  const left = (start: number, end: number) =>
    text.slice(start, end) === rule.replacement ||
    copies.some(([from, to]) => from <= start && end <= to && (from < start || end < to));
  const re = new RegExp(rule.pattern, 'y');
  let out = '';
  let at = 0;
  for (let i = 0; i <= text.length;) {
    re.lastIndex = i;
    const m = re.exec(text);
    if (!m || left(i, i + m[0].length)) {
      i++;
      continue;
    }
    out += text.slice(at, i) + rule.replacement;
    at = i + m[0].length;
    i = m[0].length > 0 ? at : i + 1;
  }
  return out + text.slice(at);
}

const same = (x: Said, y: Said) => x.policy.id === y.policy.id && x.index === y.index;

function oracle(policies: Policy[], a: Action, ctx: EvaluationContext) {
  const enforcing = policies.filter((p) => p.mode === 'enforce');
  const enforced = said(enforcing, a, ctx);
  let verdict = enforced.reduce<Verdict>(
    (v, s) => (ORDER.indexOf(s.verdict) > ORDER.indexOf(v) ? s.verdict : v),
    'allow',
  );
  let deciding = enforced.filter((s) => s.verdict === verdict);
  let modified: Action | null = null;
  // Modifications apply under a modify, and under a require_approval (the approver sees what runs).
  const modifying = enforced.filter((s) => s.verdict === 'modify');
  if ((verdict === 'modify' || verdict === 'require_approval') && modifying.length > 0) {
    const idle = new Set<Said>();
    modified = applied(modifying, { ...a }, keptOf(modifying), idle);
    // A redaction that changed nothing is no reason, unless none changed anything.
    const acting = deciding.filter((s) => !idle.has(s));
    if (verdict === 'modify' && acting.length > 0) deciding = acting;
    // What the redactions made is redacted again by those that match it, leaving every
    // replacement made so far alone, until that changes nothing; past 8 passes, a deny.
    const kept = new Set(keptOf(modifying));
    for (let pass = 1; modifying.some((s) => s.code === 'redacted'); pass++) {
      const again = said(enforcing, modified, ctx).filter((s) => s.code === 'redacted');
      keptOf(again).forEach((k) => kept.add(k));
      const idleNow = new Set<Said>();
      const next = applied(again, modified, [...kept], idleNow);
      if (JSON.stringify(next.messages) === JSON.stringify(modified.messages)) break;
      if (pass > 8) {
        const failed = { ...(again[0] as Said), code: 'policy_evaluation_failed', index: null };
        [verdict, deciding, modified] = ['deny', [failed], null];
        break;
      }
      const acted = again.filter((s) => !idleNow.has(s));
      if (verdict === 'modify') deciding.push(...acted.filter((s) => !deciding.some((d) => same(d, s))));
      modified = next;
    }
    // The modified action is judged again: a deny of it denies.
    const denied = modified ? said(enforcing, modified, ctx).filter((s) => s.verdict === 'deny') : [];
    if (denied.length > 0) [verdict, deciding, modified] = ['deny', denied, null];
  }
  const asks = deciding.flatMap((s) => (s.rule.type === 'require_approval' ? [s.rule] : []));
  const approval =
    verdict === 'require_approval' && deciding[0]
      ? {
          policyId: deciding[0].policy.id,
          approversRequired: Math.max(...asks.map((r) => r.approversRequired)),
          timeoutSeconds: Math.min(...asks.map((r) => r.timeoutSeconds)),
        }
      : null;
  const key = (s: Said) => ({ policyId: s.policy.id, ruleIndex: s.index, code: s.code });
  return { verdict, reasons: deciding.map(key), modified, approval };
}

// ---- the properties ----

const evaluate = (policies: Policy[], a: Action, ctx: EvaluationContext) =>
  evaluatePolicies(compilePolicies({ orgId: 'org_1', policyVersion: 3, policies }), a, ctx);
const keys = (reasons: { policyId: string | null; ruleIndex: number | null; code: string }[]) =>
  reasons.map(({ policyId, ruleIndex, code }) => ({ policyId, ruleIndex, code }));

describe('the policy engine against an independent oracle (fast-check, seeded)', () => {
  it('decides the strongest verdict of the enforced rules that match, with their reasons, approval and modification', () => {
    fc.assert(
      fc.property(policiesArb('enforce', 'e', 6), actionArb, contextArb, (policies, a, ctx) => {
        const d = evaluate(policies, a, ctx);
        const o = oracle(policies, a, ctx);
        expect(d.verdict).toBe(o.verdict);
        expect(keys(d.reasons)).toEqual(o.reasons);
        expect(d.approval).toEqual(o.approval);
        expect(d.modifiedAction).toEqual(o.modified);
        expect(d.shadowReasons).toEqual([]);
        expect(d.policyVersion).toBe(3);
      }),
      { seed: 0x5eed10, numRuns: 1000 },
    );
  });

  it('never raises max_tokens and changes nothing but messages and max_tokens', () => {
    fc.assert(
      fc.property(policiesArb('enforce', 'e', 6), actionArb, contextArb, (policies, a, ctx) => {
        const m = evaluate(policies, a, ctx).modifiedAction;
        if (!m) return;
        if (a.maxTokens !== undefined) expect(m.maxTokens).toBeLessThanOrEqual(a.maxTokens);
        const { messages: _m, maxTokens: _t, ...rest } = m;
        const { messages: _am, maxTokens: _at, ...original } = a;
        expect(rest).toEqual(original);
        expect(m.messages).toHaveLength(a.messages?.length ?? 0);
      }),
      { seed: 0x5eed11, numRuns: 500 },
    );
  });

  it('adding shadow policies never changes a verdict, reasons, approval or the modified action; it records what they would say', () => {
    fc.assert(
      fc.property(
        policiesArb('enforce', 'e', 4),
        policiesArb('shadow', 's', 4),
        actionArb,
        contextArb,
        (enforced, shadows, a, ctx) => {
          const before = evaluate(enforced, a, ctx);
          const after = evaluate([...shadows, ...enforced], a, ctx);
          expect({ ...after, shadowReasons: [] }).toEqual(before);
          const expected = said(shadows, a, ctx).map((s) => ({
            policyId: s.policy.id,
            ruleIndex: s.index,
            code: s.code,
            verdict: s.verdict,
          }));
          expect(after.shadowReasons.map(({ message: _m, ...r }) => r)).toEqual(expected);
        },
      ),
      { seed: 0x5eed12, numRuns: 1000 },
    );
  });
});
