import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { RE2JS } from 're2js';
import { actionDigest } from '../../domain/policy/action-digest';
import { compilePolicies, type CompiledPolicySet } from '../../domain/policy/compile-policies';
import { evaluatePolicies } from '../../domain/policy/evaluate-policies';
import {
  MAX_LIST_ITEMS,
  MAX_PATTERN_LENGTH,
  MAX_PATTERN_PROGRAM,
  MAX_POLICIES_PER_ORG,
  MAX_REPEAT_TOTAL,
  MAX_RULES_PER_POLICY,
  validatePattern,
} from '../../domain/policy/limits';
import {
  EVALUATION_MAX_MS,
  PATTERN_WORK_BUDGET,
  PatternBudget,
  PER_CHARACTER,
  RULE_WORK_BUDGET,
  worstPatternWork,
} from '../../domain/policy/pattern-budget';
import type { Action, EvaluationContext, Policy, PolicyDecision, Rule } from '../../domain/policy/policy';
import type { Verdict } from '../../domain/policy/verdict';
import { testPolicy } from '../support/test-policy';

/** Each a policy of its own id, in creation order (the engine's order among equal priorities). */
let seq = 0;
const policy = (rules: Rule[], over: Partial<Policy> = {}): Policy => {
  seq += 1;
  return testPolicy(rules, { id: `pol_${String(seq).padStart(4, '0')}`, name: `policy ${seq}`, ...over });
};

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

const without = (key: keyof Action, over: Partial<Action> = {}): Action => {
  const a = action(over);
  delete a[key];
  return a;
};

/** An assistant turn's call of the `shell` function, with these arguments (JSON text). */
const shellCall = (args: string) => ({
  id: 'call_1',
  type: 'function' as const,
  function: { name: 'shell', arguments: args },
});

/** A function tool's definition as Chat Completions sends it, with these extras in its `function`. */
const fn = <Extra extends object = object>(name: string, extra = {} as Extra) => ({
  type: 'function',
  function: { name, ...extra },
});

const context: EvaluationContext = { agentId: 'agt_1', sessionId: 'ses_1' };
const compile = (policies: Policy[], policyVersion = 7): CompiledPolicySet =>
  compilePolicies({ orgId: 'org_1', policyVersion, policies });
const decide = (policies: Policy[], a: Action = action(), ctx = context): PolicyDecision =>
  evaluatePolicies(compile(policies), a, ctx);
const codes = (d: PolicyDecision) => d.reasons.map((r) => r.code);

/** One rule per verdict, each matching `action()`. */
const RULE_FOR: Record<Verdict, Rule | null> = {
  allow: null,
  modify: { type: 'max_tokens', limit: 100 },
  require_approval: { type: 'require_approval', when: {}, approversRequired: 1, timeoutSeconds: 60 },
  deny: { type: 'deny_models', models: ['gpt-4o'] },
};
const CODE_FOR: Record<Verdict, string | null> = {
  allow: null,
  modify: 'max_tokens_clamped',
  require_approval: 'approval_required',
  deny: 'model_denied',
};
const ORDER: Verdict[] = ['allow', 'modify', 'require_approval', 'deny'];
const deny = RULE_FOR.deny as Rule;

/** A compiled rule whose regex object is replaced, to make the engine meet an error. */
function withBrokenRegex(policies: Policy[], regex: unknown): CompiledPolicySet {
  const compiled = compile(policies);
  const rule = compiled.policies[0]?.rules[0];
  if (!rule) throw new Error('no compiled rule');
  rule.regex = regex as never;
  return compiled;
}
const boom = () => {
  throw new Error('engine exploded');
};

describe('the policy engine: every rule type', () => {
  it('allows with no reasons when no policy has anything to say, on the compiled set’s version', () => {
    expect(decide([])).toEqual({
      verdict: 'allow',
      reasons: [],
      shadowReasons: [],
      modifiedAction: null,
      approval: null,
      policyVersion: 7,
    });
  });

  it('deny_models denies a listed model, naming the policy, its rule index and a stable code', () => {
    const p = policy([{ type: 'deny_tools', tools: ['x'] }, deny]);
    const d = decide([p]);
    expect(d.verdict).toBe('deny');
    expect(d.reasons).toEqual([
      { policyId: p.id, ruleIndex: 1, code: 'model_denied', message: expect.stringContaining(p.name) },
    ]);
    expect(d.reasons[0]?.message).toContain(p.id);
    expect(decide([p], action({ model: 'gpt-4o-mini' })).verdict).toBe('allow');
    expect(decide([p], without('model')).verdict).toBe('allow');
  });

  it.each([
    ['gpt-4o-mini', 'gpt-4o-mini-2024-07-18', true],
    ['claude-3-5-haiku-latest', 'claude-3-5-haiku-20241022', true],
    ['claude-opus-4-0', 'claude-opus-4-20250514', true],
    ['claude-opus-4-1', 'claude-opus-4-1-20250805', true],
    ['gpt-4o', 'gpt-4o-mini', false],
    ['gpt-4o', 'gpt-4o-mini-2024-07-18', false],
    ['claude-opus-4-0', 'claude-opus-4-1', false],
    ['gpt-4o-2024-08-06', 'gpt-4o', false],
    ['gpt-4o-2024-08-06', 'gpt-4o-2024-11-20', false],
  ])('deny_models listing %s, asked for %s: denied %s', (listed, asked, denied) => {
    const p = policy([{ type: 'deny_models', models: [listed] }]);
    expect(decide([p], action({ model: asked })).verdict).toBe(denied ? 'deny' : 'allow');
  });

  it('an alias listed in applies_to or require_approval.when also covers its dated snapshots', () => {
    const snapshot = action({ model: 'gpt-4o-mini-2024-07-18' });
    const scoped = policy([RULE_FOR.require_approval as Rule], { appliesTo: { models: ['gpt-4o-mini'] } });
    expect(decide([scoped], snapshot).verdict).toBe('require_approval');
    const when = policy([
      { ...(RULE_FOR.require_approval as Rule), when: { models: ['gpt-4o-mini'] } } as Rule,
    ]);
    expect(decide([when], snapshot).verdict).toBe('require_approval');
    expect(decide([when], action({ model: 'gpt-4o' })).verdict).toBe('allow');
  });

  it('allow_models_only stays exact: an allowed alias does not allow a snapshot it does not list', () => {
    const p = policy([{ type: 'allow_models_only', models: ['gpt-4o-mini'] }]);
    expect(codes(decide([p], action({ model: 'gpt-4o-mini-2024-07-18' })))).toEqual([
      'model_not_in_policy_allowlist',
    ]);
  });

  it('allow_models_only denies a model outside its list, and not an action without a model', () => {
    const p = policy([{ type: 'allow_models_only', models: ['gpt-4o-mini'] }]);
    expect(codes(decide([p]))).toEqual(['model_not_in_policy_allowlist']);
    expect(decide([p], action({ model: 'gpt-4o-mini' })).verdict).toBe('allow');
    expect(decide([p], without('model', { type: 'tool.call' })).verdict).toBe('allow');
  });

  it('deny_tools denies a listed tool, not another tool nor an action without a tool', () => {
    const p = policy([{ type: 'deny_tools', tools: ['shell'] }]);
    expect(codes(decide([p], action({ tool: { name: 'shell', arguments: {} } })))).toEqual(['tool_denied']);
    expect(decide([p], action({ tool: { name: 'search', arguments: {} } })).verdict).toBe('allow');
    expect(decide([p]).verdict).toBe('allow');
  });

  it('deny_tools also denies a listed tool the call offers the model or that its conversation called', () => {
    const p = policy([{ type: 'deny_tools', tools: ['shell'] }]);
    const offered = action({ offeredTools: [fn('search'), fn('shell')] });
    expect(decide([p], offered).reasons).toEqual([
      expect.objectContaining({
        code: 'tool_denied',
        message: expect.stringContaining('tool shell is denied'),
      }),
    ]);
    expect(decide([p], action({ offeredTools: [fn('search')] })).verdict).toBe('allow');
    const called = action({
      messages: [
        { role: 'user', content: 'list the files' },
        { role: 'assistant', content: '', toolCalls: [shellCall('{"cmd":"ls"}')] },
        { role: 'tool', content: 'a.txt', toolCallId: 'call_1' },
      ],
    });
    expect(codes(decide([p], called))).toEqual(['tool_denied']);
  });

  it('deny_pattern denies when any message matches, honouring the i, m and s flags', () => {
    const on = (rule: Rule, content: string) =>
      decide([policy([rule])], action({ messages: [{ role: 'assistant', content }] })).verdict;
    expect(codes(decide([policy([{ type: 'deny_pattern', pattern: 'card' }])]))).toEqual(['pattern_denied']);
    expect(on({ type: 'deny_pattern', pattern: 'SECRET' }, 'a secret')).toBe('allow');
    expect(on({ type: 'deny_pattern', pattern: 'SECRET', flags: 'i' }, 'a secret')).toBe('deny');
    expect(on({ type: 'deny_pattern', pattern: '^b' }, 'a\nb')).toBe('allow');
    expect(on({ type: 'deny_pattern', pattern: '^b', flags: 'm' }, 'a\nb')).toBe('deny');
    expect(on({ type: 'deny_pattern', pattern: 'a.b' }, 'a\nb')).toBe('allow');
    expect(on({ type: 'deny_pattern', pattern: 'a.b', flags: 's' }, 'a\nb')).toBe('deny');
    expect(decide([policy([{ type: 'deny_pattern', pattern: '.' }])], without('messages')).verdict).toBe(
      'allow',
    );
  });

  it('redact_pattern rewrites every message, leaves the rest of the action alone, and takes the replacement literally', () => {
    const literal = '$1 $& $$ \\ ${x}';
    const p = policy([{ type: 'redact_pattern', pattern: '(\\d{4})', replacement: literal }]);
    const a = action({
      messages: [
        { role: 'system', content: 'pin 1234' },
        { role: 'user', content: 'card 4111-2222' },
        { role: 'assistant', content: 'no digits here' },
        { role: 'tool', content: '9999' },
      ],
    });
    const d = decide([p], a);
    expect(d).toMatchObject({
      verdict: 'modify',
      reasons: [{ policyId: p.id, ruleIndex: 0, code: 'redacted' }],
    });
    expect(d.modifiedAction).toEqual({
      ...a,
      messages: [
        { role: 'system', content: `pin ${literal}` },
        { role: 'user', content: `card ${literal}-${literal}` },
        { role: 'assistant', content: 'no digits here' },
        { role: 'tool', content: literal },
      ],
    });
    expect(a.messages?.[0]?.content).toBe('pin 1234'); // the input is not mutated
  });

  it('patterns see text written to slip past them: fullwidth, ligatures, accents, invisible characters, JSON escapes', () => {
    const say = (content: string) => action({ messages: [{ role: 'user', content }] });
    const denied = (pattern: string, content: string) =>
      decide([policy([{ type: 'deny_pattern', pattern }])], say(content)).verdict;
    expect(denied('password', 'my ｐａｓｓｗｏｒｄ is')).toBe('deny');
    expect(denied('password', 'my pass\u200bword is')).toBe('deny');
    expect(denied('password', 'my pass\u00adword is')).toBe('deny');
    expect(denied('password', 'my pa\u0301ssword is')).toBe('deny'); // a combining accent
    // Marks of the blocks any letter may carry, beyond the accents' own (QA).
    for (const mark of ['\u1ab0', '\u1dc0', '\u20d0', '\u20e3', '\ufe20'])
      expect(denied('password', `my pa${mark}ssword is`)).toBe('deny');
    // Any other combining mark on a Latin letter, and runs of them (QA: Vedic, musical, Arabic,
    // Cyrillic marks); a script's own marks on its own letters stay (a Devanagari vowel sign).
    for (const marks of ['\u1cd0', '\u{1d165}', '\u064b', '\u0483', '\u0951', '\u302a', '\u1cd0\u064b\u0483'])
      expect(denied('password', `my pa${marks}ssword is`)).toBe('deny');
    expect(denied('कछ', 'यह कुछ है')).toBe('allow');
    // Format characters that are not default-ignorable split no word (QA).
    for (const format of ['\ufff9', '\ufffb', '\u{13430}', '\u0600'])
      expect(denied('password', `my pass${format}word is`)).toBe('deny');
    // A secret written in Unicode tag characters is read as the ASCII they carry (QA).
    const tagged = (ascii: string) =>
      [...ascii].map((c) => String.fromCodePoint(0xe0000 + (c.codePointAt(0) as number))).join('');
    expect(denied('hunter2', `hi ${tagged('password=hunter2')}`)).toBe('deny');
    const sent = decide(
      [policy([{ type: 'redact_pattern', pattern: 'password=\\S+', replacement: '[P]' }])],
      say(`hi ${tagged('password=hunter2')}`),
    ).modifiedAction?.messages?.[0]?.content;
    expect(sent).toBe('hi [P]');
    expect(denied('password', 'my pàsswörd is')).toBe('deny'); // precomposed accents
    expect(denied('profile', 'my pro\ufb01le')).toBe('deny'); // the "fi" ligature
    // A pattern written for the characters as sent still meets them.
    expect(denied('ｐａｓｓ', 'my ｐａｓｓｗｏｒｄ')).toBe('deny');
    expect(denied('café', 'a café')).toBe('deny');
    expect(denied('password', 'my pаssword')).toBe('allow'); // a Cyrillic "а": not folded
    // Control characters inside a word show as nothing; a line break still parts words (QA).
    expect(denied('password', 'my pass\x7fword')).toBe('deny');
    expect(denied('password', 'my pass\bword')).toBe('deny');
    for (const white of ['\n', '\t', '\v', '\f', '\r', '\u0085'])
      expect(denied('password', `my pass${white}word`)).toBe('allow');
    // A pattern written with accents meets the text's plain form (accents kept) too: decomposed,
    // with an invisible character or fullwidth letters, the text still shows it (QA).
    for (const text of [
      'это секретный план',
      'это секрет\u200bный план',
      'это секретный план'.normalize('NFD'),
    ])
      expect(denied('секретный', text)).toBe('deny');
    for (const text of [
      'mi contraseña',
      'mi contra\u200bseña',
      'mi ｃontraseña',
      'mi contraseña'.normalize('NFD'),
    ])
      expect(denied('contraseña', text)).toBe('deny');
    // Escapes in a tool call's JSON arguments are read as the model reads them.
    for (const args of ['{"q":"pass\\u200bword"}', '{"q":"\\uff50assword"}', '{"pa\\u0073sword":1}']) {
      const called = action({ messages: [{ role: 'assistant', content: '', toolCalls: [shellCall(args)] }] });
      expect(decide([policy([{ type: 'deny_pattern', pattern: 'password' }])], called).verdict).toBe('deny');
    }

    const redact = (content: string) =>
      decide(
        [policy([{ type: 'redact_pattern', pattern: 'sk-[a-z0-9]+', replacement: '[key]' }])],
        say(content),
      ).modifiedAction?.messages?.[0]?.content;
    // A match that shows only once folded: the text is sent folded, with the match taken out.
    expect(redact('key ｓｋ－abc123 and sk-def456')).toBe('key [key] and [key]');
    expect(redact('key sk-\u200babc123')).toBe('key [key]');
    // A match the text shows as sent is taken out of it as it is: its other characters stay.
    expect(redact('ｈｉ ① sk-abc123 👨‍👩‍👧')).toBe('ｈｉ ① [key] 👨‍👩‍👧');
    expect(redact('日本語のテキスト sk-abc123')).toBe('日本語のテキスト [key]');
    const redactAccented = (content: string) =>
      decide([policy([{ type: 'redact_pattern', pattern: 'clé \\d+', replacement: '[clé]' }])], say(content))
        .modifiedAction?.messages?.[0]?.content;
    // A redaction that matches only once folded waits for every other to take its matches out
    // with the accents on (QA: "secret" folded the text first, and "Zürich-42" met "Zurich-42").
    const both = decide(
      [
        policy([
          { type: 'redact_pattern', pattern: 'secret', replacement: '[S]' },
          { type: 'redact_pattern', pattern: 'Zürich-42', replacement: '[Z]' },
        ]),
      ],
      say('sécret Zürich-42'),
    );
    expect(both.modifiedAction?.messages?.[0]?.content).toBe('[S] [Z]');
    // Two that match only once folded: the second meets the text the first sent folded (QA).
    const folded = decide(
      [
        policy([{ type: 'redact_pattern', pattern: 'secret', replacement: '[S]' }]),
        policy([{ type: 'redact_pattern', pattern: 'password', replacement: '[P]' }]),
      ],
      say('sécret pässword'),
    );
    expect(folded.modifiedAction?.messages?.[0]?.content).toBe('[S] [P]');
    // A replacement that leaves a new match is applied again (QA: "" left "hunter2"); one that
    // matches the pattern itself is applied once.
    const redactWith = (pattern: string, replacement: string, content: string) =>
      decide([policy([{ type: 'redact_pattern', pattern, replacement }])], say(content)).modifiedAction
        ?.messages?.[0]?.content;
    expect(redactWith('hunter2', '', 'my pw is hunhunter2ter2')).toBe('my pw is ');
    expect(redactWith('secret', '[secret]', 'a secret')).toBe('a [secret]');
    // Sent in its plain form, accents kept, with the match taken out.
    expect(redactAccented('ma cle\u0301 123456 ok')).toBe('ma [clé] ok');
    expect(redactAccented('ma cl\u200bé 123456 ok')).toBe('ma [clé] ok');
    expect(redactAccented('ma clé 123456 ok')).toBe('ma [clé] ok');
    expect(
      decide(
        [policy([{ type: 'redact_pattern', pattern: 'sk-[a-z0-9]+', replacement: '#' }])],
        say('ｈｉ ok'),
      ).verdict,
    ).toBe('allow');
  });

  it('a redaction counts the folded forms in its pattern budget only where folding changes a text', () => {
    const pattern = 'sk-[a-z0-9]+';
    const rule = policy([{ type: 'redact_pattern', pattern, replacement: '#' }]);
    const say = (content: string) => action({ messages: [{ role: 'user', content }] });
    const unit = RE2JS.compile(pattern).matcher('').programSize() + PER_CHARACTER;
    // Text as sent: a match and a rewrite, two scans, two thirds of what one rule may scan.
    const n = Math.floor(RULE_WORK_BUDGET / (3 * unit));
    expect(decide([rule], say('a'.repeat(n))).verdict).toBe('allow');
    // Accented: its folded form too, matched, found and rewritten: five scans, past the budget.
    expect(codes(decide([rule], say('é'.repeat(n))))).toEqual(['policy_evaluation_failed']);
  });

  it('a match spanning JSON tokens is redacted as text with the escapes written out, so an escaped copy is not sent (QA)', () => {
    const args = '{"mot de passe":"hunter2","note":"mot\\u0020de passe: s3cr3t","z":"de\\u200b"}';
    const a = action({ messages: [{ role: 'assistant', content: '', toolCalls: [shellCall(args)] }] });
    const rule = {
      type: 'redact_pattern' as const,
      pattern: 'mot de passe[": ]+[^",}]+',
      replacement: '[MDP]',
    };
    const sent = decide([policy([rule])], a).modifiedAction?.messages?.[0]?.toolCalls?.[0]?.function
      .arguments;
    expect(sent).not.toMatch(/hunter2|s3cr3t/);
    expect(sent).toContain('[MDP]');
    // A span redacted first leaves text that is not JSON; a secret hidden there by an escape of a
    // control character is still found, by the same rule or the next (QA).
    const userAdmin = { type: 'redact_pattern' as const, pattern: '"user":"admin"', replacement: '[U]' };
    const pw = { type: 'redact_pattern' as const, pattern: 'password', replacement: '[P]' };
    const either = {
      type: 'redact_pattern' as const,
      pattern: 'password|"user":"admin"',
      replacement: '[X]',
    };
    const hiddenBs = action({
      messages: [
        { role: 'assistant', content: '', toolCalls: [shellCall('{"user":"admin","q":"pass\\bword"}')] },
      ],
    });
    for (const rules of [[userAdmin, pw], [either]]) {
      const out = decide([policy(rules)], hiddenBs).modifiedAction?.messages?.[0]?.toolCalls?.[0];
      expect(out?.function.arguments).not.toMatch(/pass.{0,2}word|admin/);
    }
    // Hidden by an escape alone, with no plain copy beside it: found, redacted or denied (QA).
    for (const hidden of ['{"mot\\u0020de passe":"hunter2"}', '{"mot de pass\\u0065":"hunter2"}']) {
      const h = action({ messages: [{ role: 'assistant', content: '', toolCalls: [shellCall(hidden)] }] });
      const redacted = decide([policy([rule])], h).modifiedAction?.messages?.[0]?.toolCalls?.[0];
      expect(redacted?.function.arguments).not.toContain('hunter2');
      const deny = { type: 'deny_pattern' as const, pattern: rule.pattern };
      expect(decide([policy([deny])], h).verdict).toBe('deny');
    }
  });

  it('deny_pattern and redact_pattern see the arguments of tool calls in the conversation', () => {
    const a = action({
      messages: [
        { role: 'user', content: 'run it' },
        { role: 'assistant', content: '', toolCalls: [shellCall('{"card":"4111-1111-1111-1111"}')] },
      ],
    });
    expect(codes(decide([policy([{ type: 'deny_pattern', pattern: '4111' }])], a))).toEqual([
      'pattern_denied',
    ]);
    const d = decide([policy([{ type: 'redact_pattern', pattern: '\\d{4}', replacement: '#' }])], a);
    expect(d.verdict).toBe('modify');
    expect(d.modifiedAction?.messages?.[1]).toEqual({
      role: 'assistant',
      content: '',
      toolCalls: [shellCall('{"card":"#-#-#-#"}')],
    });
    expect(a.messages?.[1]?.toolCalls?.[0]?.function.arguments).toContain('4111'); // not mutated
  });

  it('a redaction keeps the arguments of tool calls valid JSON: numbers it changes become strings', () => {
    const withArgs = (args: string) =>
      action({ messages: [{ role: 'assistant', content: '', toolCalls: [shellCall(args)] }] });
    const redact = (pattern: string, replacement: string, args: string) =>
      decide([policy([{ type: 'redact_pattern', pattern, replacement }])], withArgs(args)).modifiedAction
        ?.messages?.[0]?.toolCalls?.[0]?.function.arguments;
    const ssn = redact('\\b\\d{9}\\b', '[SSN]', '{"ssn":123456789,"note":"id 987654321"}');
    expect(JSON.parse(ssn ?? '')).toEqual({ ssn: '[SSN]', note: 'id [SSN]' });
    // A replacement holding a quote is escaped, not spliced into the JSON text.
    expect(JSON.parse(redact('x', '"}', '{"q":"x"}') ?? '')).toEqual({ q: '"}' });
    // Arguments that are not JSON are redacted as text.
    expect(redact('\\d+', '#', 'call 42 now')).toBe('call # now');
    // Keys are rewritten too, and every byte nothing matched stays as sent (no number re-serialised).
    const big = '{"id": 12345678901234567890, "to": {"alice@example.com": 1.50}}';
    expect(redact('[a-z]+@[a-z.]+', '[email]', big)).toBe(
      '{"id": 12345678901234567890, "to": {"[email]": 1.50}}',
    );
    // A match across a key and its value is redacted as text: it never reaches the provider.
    const pair = redact(
      '"password"\\s*:\\s*"[^"]*"',
      '"password":"***"',
      '{"user":"bob","password":"hunter2"}',
    );
    expect(pair).toBe('{"user":"bob","password":"***"}');
  });

  it('deny_pattern and redact_pattern see every string in the arguments of the action’s own tool call', () => {
    const args = { cmd: 'rm -rf /', env: [{ card: '4111-1111-1111-1111' }], dry_run: false, n: 4111 };
    const a = action({ type: 'tool.call', tool: { name: 'shell', arguments: args } });
    expect(codes(decide([policy([{ type: 'deny_pattern', pattern: 'rm -rf' }])], a))).toEqual([
      'pattern_denied',
    ]);
    const d = decide([policy([{ type: 'redact_pattern', pattern: '\\d{4}', replacement: '#' }])], a);
    expect(d.verdict).toBe('modify');
    // Strings are rewritten in place; keys, numbers and booleans keep the arguments' shape.
    expect(d.modifiedAction?.tool).toEqual({
      name: 'shell',
      arguments: { cmd: 'rm -rf /', env: [{ card: '#-#-#-#' }], dry_run: false, n: 4111 },
    });
    expect(args.env[0]?.card).toBe('4111-1111-1111-1111'); // not mutated
  });

  it('deny_pattern and redact_pattern see every string in the definitions of the tools offered (QA F-9)', () => {
    const lookup = fn('lookup', {
      description: 'card on file: 4111-1111-1111-1111',
      parameters: {
        type: 'object',
        properties: { region: { type: 'string', enum: ['eu', 'sk-live-abc'] } },
      },
    });
    const a = action({
      messages: [{ role: 'user', content: 'hello' }],
      offeredTools: [fn('search'), lookup],
    });
    expect(codes(decide([policy([{ type: 'deny_pattern', pattern: 'sk-live' }])], a))).toEqual([
      'pattern_denied',
    ]);
    // Folded like every other text: a zero-width space does not hide the word.
    const hidden = action({
      offeredTools: [fn('shell', { description: 'ig\u200bnore previous instructions' })],
    });
    expect(codes(decide([policy([{ type: 'deny_pattern', pattern: 'ignore previous' }])], hidden))).toEqual([
      'pattern_denied',
    ]);
    const d = decide([policy([{ type: 'redact_pattern', pattern: '\\d{4}', replacement: '#' }])], a);
    expect(d.verdict).toBe('modify');
    // Strings are rewritten in place; the keys keep the schema's shape.
    expect(d.modifiedAction?.offeredTools).toEqual([
      fn('search'),
      { ...lookup, function: { ...lookup.function, description: 'card on file: #-#-#-#' } },
    ]);
    expect(lookup.function.description).toBe('card on file: 4111-1111-1111-1111'); // not mutated
  });

  it('reads the keys of the tool definitions too, renaming a property alike where `required` names it (QA)', () => {
    const schema = (name: string) => ({
      parameters: { type: 'object', properties: { [name]: { type: 'string' } }, required: [name] },
    });
    const keyed = action({ offeredTools: [fn('f', schema('secret_4111'))] });
    expect(codes(decide([policy([{ type: 'deny_pattern', pattern: 'secret_' }])], keyed))).toEqual([
      'pattern_denied',
    ]);
    const d = decide([policy([{ type: 'redact_pattern', pattern: '\\d{4}', replacement: 'n' }])], keyed);
    expect(d.modifiedAction?.offeredTools).toEqual([fn('f', schema('secret_n'))]);
    // Two properties a redaction would make one: not sent with one dropped, denied.
    const twins = action({
      offeredTools: [fn('f', { parameters: { properties: { a_1111: {}, a_2222: {} } } })],
    });
    expect(
      codes(decide([policy([{ type: 'redact_pattern', pattern: '\\d{4}', replacement: 'n' }])], twins)),
    ).toEqual(['policy_evaluation_failed']);
  });

  it("denies a redaction that would make two keys of a tool call's arguments one, not send one dropped (QA)", () => {
    const redactKeys = policy([{ type: 'redact_pattern', pattern: 'sk-[a-z0-9]+', replacement: '[key]' }]);
    const called = (args: string) =>
      action({ messages: [{ role: 'assistant', content: '', toolCalls: [shellCall(args)] }] });
    expect(codes(decide([redactKeys], called('{"sk-abc1":1,"n":"x","sk-abc2":2}')))).toEqual([
      'policy_evaluation_failed',
    ]);
    // Keys the arguments already repeated elsewhere do not hide the merge (QA).
    expect(codes(decide([redactKeys], called('{"o":{"a":1,"a":2},"sk-abc1":1,"sk-abc2":2}')))).toEqual([
      'policy_evaluation_failed',
    ]);
    // Nor does a pattern that spans a key and its value, changed as text (QA).
    const spanning = policy([
      { type: 'redact_pattern', pattern: '"pass\\w*"\\s*:\\s*"[^"]*"', replacement: '"pass":"[R]"' },
    ]);
    expect(codes(decide([spanning], called('{"pass1":"aaa","pass2":"bbb"}')))).toEqual([
      'policy_evaluation_failed',
    ]);
    // One such key, or keys that stay apart, are rewritten as before.
    const one = decide([redactKeys], called('{"sk-abc1":1,"n":"sk-abc2"}'));
    expect(one.modifiedAction?.messages?.[0]?.toolCalls?.[0]?.function.arguments).toBe(
      '{"[key]":1,"n":"[key]"}',
    );
  });

  it('deny_tools names a tool whatever its case, width or invisible characters (QA)', () => {
    const p = policy([{ type: 'deny_tools', tools: ['danger'] }]);
    for (const name of ['Danger', 'ＤＡＮＧＥＲ', 'dan\u200bger', 'danger'])
      expect(decide([p], action({ offeredTools: [fn(name)] })).verdict).toBe('deny');
    expect(decide([p], action({ offeredTools: [fn('dangerous')] })).verdict).toBe('allow');
  });

  it('numbers in the tool definitions are read and redacted too, a changed one becoming a string (QA)', () => {
    const billing = fn('bill', {
      parameters: { properties: { card: { default: 4111111111111111, maximum: 12 } } },
    });
    const a = action({ messages: [{ role: 'user', content: 'hi' }], offeredTools: [billing] });
    expect(codes(decide([policy([{ type: 'deny_pattern', pattern: '4111' }])], a))).toEqual([
      'pattern_denied',
    ]);
    const d = decide([policy([{ type: 'redact_pattern', pattern: '\\d{16}', replacement: '[card]' }])], a);
    expect(d.modifiedAction?.offeredTools).toEqual([
      fn('bill', { parameters: { properties: { card: { default: '[card]', maximum: 12 } } } }),
    ]);
  });

  it('tool_choice counts: the tool it forces is judged by deny_tools, its text by patterns, and a redaction keeps it naming its tool (QA)', () => {
    const forced = { type: 'function', function: { name: 'secret_tool' } };
    const a = action({ offeredTools: [fn('secret_tool')], toolChoice: forced });
    expect(
      decide([policy([{ type: 'deny_tools', tools: ['secret_tool'] }])], action({ toolChoice: forced }))
        .verdict,
    ).toBe('deny');
    expect(
      decide([policy([{ type: 'deny_tools', tools: ['secret_tool'] }])], action({ toolChoice: 'auto' }))
        .verdict,
    ).toBe('allow');
    expect(
      codes(decide([policy([{ type: 'deny_pattern', pattern: 'secret' }])], action({ toolChoice: forced }))),
    ).toEqual(['pattern_denied']);
    const d = decide([policy([{ type: 'redact_pattern', pattern: 'secret', replacement: 'r' }])], a);
    expect(d.modifiedAction?.offeredTools).toEqual([fn('r_tool')]);
    expect(d.modifiedAction?.toolChoice).toEqual({ type: 'function', function: { name: 'r_tool' } });
  });

  it('patterns read the names and ids of the tool calls in the conversation, and a redaction keeps each result naming its call (QA)', () => {
    const call = {
      id: 'call_secret',
      type: 'function' as const,
      function: { name: 'secret_fn', arguments: '{}' },
    };
    const a = action({
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: '', toolCalls: [call] },
        { role: 'tool', content: 'done', toolCallId: 'call_secret' },
      ],
    });
    expect(codes(decide([policy([{ type: 'deny_pattern', pattern: 'secret_fn' }])], a))).toEqual([
      'pattern_denied',
    ]);
    const d = decide([policy([{ type: 'redact_pattern', pattern: 'secret', replacement: 'x' }])], a);
    const [, assistant, result] = d.modifiedAction?.messages ?? [];
    expect(assistant?.toolCalls?.[0]).toMatchObject({ id: 'call_x', function: { name: 'x_fn' } });
    expect(result?.toolCallId).toBe('call_x');
  });

  it('reads a tool call whose escaped arguments hold 150,000 strings (no argument list too long)', () => {
    // One escape (a newline) has its strings decoded: 150,000 texts from one tool call.
    const args = JSON.stringify({ list: Array<string>(150_000).fill(''), note: 'a\nb' });
    const call = { id: 'call_1', type: 'function' as const, function: { name: 'f', arguments: args } };
    const a = action({ messages: [{ role: 'assistant', content: '', toolCalls: [call] }] });
    expect(decide([policy([{ type: 'deny_pattern', pattern: 'zzz' }])], a).verdict).toBe('allow');
  });

  it('counts each text as work however short, so a schema of many empty strings is not taken for none (QA)', () => {
    const many = action({
      offeredTools: [fn('f', { parameters: { enum: Array<string>(100_000).fill('') } })],
    });
    const compiled = compile([policy([{ type: 'deny_pattern', pattern: 'x' }])]);
    // 100,000 texts and more weigh at least a character each, times the pattern's cost per character.
    expect(worstPatternWork(compiled, many)).toBeGreaterThan(100_000 * 20);
  });

  it('judges the action a redaction makes again: a longer prompt past max_cost_per_call_usd is denied', () => {
    const grow = policy([{ type: 'redact_pattern', pattern: '\\d{4}', replacement: 'Z'.repeat(5000) }]);
    const cap = policy([{ type: 'max_cost_per_call_usd', limit: 0.05 }]);
    // The caller prices the modified action: here a cent per 1,000 characters of prompt.
    const reestimate = (a: Action) =>
      (a.messages ?? []).reduce((n, m) => n + String(m.content).length, 0) / 100_000;
    const d = decide([grow, cap], action(), { ...context, reestimate });
    expect(d).toMatchObject({ verdict: 'deny', modifiedAction: null, approval: null });
    expect(codes(d)).toEqual(['cost_per_call_exceeded']);
    // Without a new estimate the rule judges the one given (0.02), which fits.
    expect(decide([grow, cap])).toMatchObject({ verdict: 'modify', reasons: [{ code: 'redacted' }] });
    // An estimate that does not grow past the limit keeps the modification.
    expect(decide([grow, cap], action(), { ...context, reestimate: () => 0.05 }).verdict).toBe('modify');
  });

  it('judges max_cost_per_call_usd on the clamped request an invoke reserves, not the max_tokens asked (QA)', () => {
    const clamp = policy([{ type: 'max_tokens', limit: 10 }]);
    const cap = policy([{ type: 'max_cost_per_call_usd', limit: 0.0001 }]);
    // The invoke prices the action as it will run: here a micro-dollar per output token.
    const reestimate = (a: Action) => (a.maxTokens ?? 0) / 1_000_000;
    const asked = action({ maxTokens: 1000, estimatedCostUsd: 0.001 });
    const d = decide([clamp, cap], asked, { ...context, reestimate });
    expect(d).toMatchObject({ verdict: 'modify', modifiedAction: { maxTokens: 10 } });
    expect(codes(d)).toEqual(['max_tokens_clamped']);
    // A clamp that leaves it over the limit is denied, for the cost of the clamped request.
    const loose = policy([{ type: 'max_tokens', limit: 500 }]);
    const over = decide([loose, cap], asked, { ...context, reestimate });
    expect(over).toMatchObject({ verdict: 'deny', modifiedAction: null });
    expect(over.reasons).toEqual([
      expect.objectContaining({
        code: 'cost_per_call_exceeded',
        message: expect.stringContaining('$0.0005'),
      }),
    ]);
    // Another denial is not lifted by a clamp, nor is the estimate of a caller that cannot reprice.
    const forbid = policy([{ type: 'deny_pattern', pattern: '4111' }]);
    expect(codes(decide([clamp, cap, forbid], asked, { ...context, reestimate }))).toEqual([
      'cost_per_call_exceeded',
      'pattern_denied',
    ]);
    expect(codes(decide([clamp, cap], asked))).toEqual(['cost_per_call_exceeded']);
  });

  it('judges an approval minimum and a shadow cost rule on the clamped request an invoke reserves, as an enforced cost rule (QA)', () => {
    const clamp = policy([{ type: 'max_tokens', limit: 10 }]);
    const reestimate = (a: Action) => (a.maxTokens ?? 0) / 1_000_000;
    const asked = action({ maxTokens: 1000, estimatedCostUsd: 0.001 });
    const costly: Rule = {
      type: 'require_approval',
      when: { minEstimatedCostUsd: 0.0005 },
      approversRequired: 1,
      timeoutSeconds: 60,
    };
    // Clamped to 10 tokens ($0.00001), under the minimum: no approval; unclamped it would be held.
    expect(decide([clamp, policy([costly])], asked, { ...context, reestimate })).toMatchObject({
      verdict: 'modify',
      approval: null,
    });
    const loose = policy([{ type: 'max_tokens', limit: 800 }]);
    expect(decide([loose, policy([costly])], asked, { ...context, reestimate }).verdict).toBe(
      'require_approval',
    );
    // A shadow cost rule says what it would say enforced: nothing, at the clamped cost.
    const shadowCap = policy([{ type: 'max_cost_per_call_usd', limit: 0.0001 }], { mode: 'shadow' });
    expect(decide([clamp, shadowCap], asked, { ...context, reestimate }).shadowReasons).toEqual([]);
    const shadowLoose = decide([loose, shadowCap], asked, { ...context, reestimate });
    expect(shadowLoose.shadowReasons).toEqual([
      expect.objectContaining({
        code: 'cost_per_call_exceeded',
        verdict: 'deny',
        message: expect.stringContaining('$0.0008'),
      }),
    ]);
    // Without repricing (the evaluate endpoint), the caller's estimate is judged as given.
    expect(decide([clamp, shadowCap], asked).shadowReasons).toHaveLength(1);
    // A shadow policy's own clamp counts for its own cost rules, as it would enforced (QA round 3).
    const shadowBoth = policy(
      [{ type: 'max_tokens', limit: 10 }, { type: 'max_cost_per_call_usd', limit: 0.0001 }, costly],
      { mode: 'shadow' },
    );
    const alone = decide([shadowBoth], asked, { ...context, reestimate });
    expect(alone).toMatchObject({ verdict: 'allow', modifiedAction: null });
    expect(alone.shadowReasons.map((r) => r.code)).toEqual(['max_tokens_clamped']);
    // Denied after the enforced clamp, the shadow rule still judges the clamped request (QA round 4).
    const enforcedCap = policy([{ type: 'max_cost_per_call_usd', limit: 0.00001 }]);
    const shadowLimit = policy([{ type: 'max_cost_per_call_usd', limit: 0.0009 }], { mode: 'shadow' });
    const denied = decide([loose, enforcedCap, shadowLimit], asked, { ...context, reestimate });
    expect(denied.verdict).toBe('deny');
    expect(denied.shadowReasons).toEqual([]);
    // A denial for more than cost keeps what the cost asked said, as enforced.
    const shadowWide = policy(
      [
        { type: 'max_tokens', limit: 10 },
        { type: 'max_cost_per_call_usd', limit: 0.0001 },
        { type: 'deny_pattern', pattern: '4111' },
      ],
      { mode: 'shadow' },
    );
    expect(decide([shadowWide], asked, { ...context, reestimate }).shadowReasons.map((r) => r.code)).toEqual([
      'max_tokens_clamped',
      'cost_per_call_exceeded',
      'pattern_denied',
    ]);
  });

  it('asks for the approval a redaction makes necessary: a prompt grown past min_estimated_cost_usd is held (QA)', () => {
    const grow = policy([{ type: 'redact_pattern', pattern: '\\d{4}', replacement: 'Z'.repeat(5000) }]);
    const costly = (approversRequired: number, minEstimatedCostUsd = 0.05): Rule => ({
      type: 'require_approval',
      when: { minEstimatedCostUsd },
      approversRequired,
      timeoutSeconds: 60,
    });
    const hold = policy([costly(2)]);
    const reestimate = (a: Action) =>
      (a.messages ?? []).reduce((n, m) => n + String(m.content).length, 0) / 100_000;
    // As asked (0.02) the call needs no approval; redacted, it is worth about 0.2.
    expect(decide([hold]).verdict).toBe('allow');
    const d = decide([grow, hold], action(), { ...context, reestimate });
    expect(d).toMatchObject({
      verdict: 'require_approval',
      approval: { policyId: hold.id, approversRequired: 2 },
    });
    expect(codes(d)).toEqual(['approval_required']);
    expect(d.modifiedAction?.messages?.[1]?.content).toContain('Z'.repeat(5000));
    // Held already, the stricter requirement the redaction brings in is added to it.
    const anyCall = policy([RULE_FOR.require_approval as Rule]);
    const both = decide([grow, hold, anyCall], action(), { ...context, reestimate });
    expect(both.approval?.approversRequired).toBe(2);
    expect(codes(both)).toEqual(['approval_required', 'approval_required']);
    // Without a new estimate the rule judges the one given, which is under the threshold.
    expect(decide([grow, hold]).verdict).toBe('modify');
  });

  it('denies a redaction whose replacement writes text a deny_pattern forbids, also under require_approval', () => {
    const swap = policy([{ type: 'redact_pattern', pattern: '\\d{4}', replacement: 'rm -rf /' }]);
    const forbid = policy([{ type: 'deny_pattern', pattern: 'rm -rf' }]);
    expect(codes(decide([swap, forbid]))).toEqual(['pattern_denied']);
    const held = policy([RULE_FOR.require_approval as Rule]);
    expect(decide([swap, forbid, held])).toMatchObject({
      verdict: 'deny',
      approval: null,
      modifiedAction: null,
    });
    // A shadow deny of the modified action changes nothing.
    const shadowForbid = policy([{ type: 'deny_pattern', pattern: 'rm -rf' }], { mode: 'shadow' });
    expect(decide([swap, shadowForbid]).verdict).toBe('modify');
  });

  it('names only the redactions that changed something: one whose match an earlier one took out is no reason (QA)', () => {
    const a = policy([{ type: 'redact_pattern', pattern: 'abc', replacement: 'X' }], { priority: 1 });
    const b = policy([{ type: 'redact_pattern', pattern: 'b', replacement: 'Y' }], { priority: 2 });
    const asked = action({ messages: [{ role: 'user', content: 'abc' }] });
    const d = decide([a, b], asked);
    expect(d.modifiedAction?.messages?.[0]?.content).toBe('aYc');
    expect(d.reasons).toEqual([expect.objectContaining({ policyId: b.id, code: 'redacted' })]);
    // B runs first (higher priority) and takes the b out of every abc, wherever it stands.
    const both = decide([a, b], action({ messages: [{ role: 'user', content: 'abc, then b' }] }));
    expect(both.reasons.map((r) => r.policyId)).toEqual([b.id]);
    const apart = decide([a, b], action({ messages: [{ role: 'user', content: 'b abc' }] }));
    expect(apart.reasons.map((r) => r.policyId)).toEqual([b.id]);
    const first = decide(
      [b, policy([{ type: 'redact_pattern', pattern: 'zz', replacement: 'Q' }])],
      action({ messages: [{ role: 'user', content: 'b zz' }] }),
    );
    // Two that each take out text of their own are both named.
    expect(first.reasons).toHaveLength(2);
  });

  it('does not name a redaction that changed nothing in a later pass either (QA: `sec` beside `secret`)', () => {
    const secret = policy([{ type: 'redact_pattern', pattern: 'secret', replacement: '[S]' }], {
      priority: 3,
    });
    const x = policy([{ type: 'redact_pattern', pattern: 'x', replacement: '' }], { priority: 2 });
    const sec = policy([{ type: 'redact_pattern', pattern: 'sec', replacement: '[D]' }], { priority: 1 });
    const d = decide([secret, x, sec], action({ messages: [{ role: 'user', content: 'sxecret' }] }));
    expect(d.modifiedAction?.messages?.[0]?.content).toBe('[S]');
    expect(d.reasons.map((r) => r.policyId)).toEqual([x.id, secret.id]);
  });

  it('redact_pattern says nothing when no message matches', () => {
    const p = policy([{ type: 'redact_pattern', pattern: 'password', replacement: 'x' }]);
    expect(decide([p])).toMatchObject({ verdict: 'allow', reasons: [], modifiedAction: null });
  });

  it('max_tokens clamps down, never raises, and says nothing when already within', () => {
    expect(decide([policy([{ type: 'max_tokens', limit: 100 }])])).toMatchObject({
      verdict: 'modify',
      reasons: [{ code: 'max_tokens_clamped' }],
      modifiedAction: { maxTokens: 100 },
    });
    for (const limit of [500, 501, 100_000])
      expect(decide([policy([{ type: 'max_tokens', limit }])])).toMatchObject({
        verdict: 'allow',
        reasons: [],
        modifiedAction: null,
      });
    expect(decide([policy([{ type: 'max_tokens', limit: 1 }])], without('maxTokens')).verdict).toBe('allow');
  });

  it('max_tokens: several clamps give the lowest limit, whatever their order', () => {
    const low = policy([{ type: 'max_tokens', limit: 200 }], { priority: 1 });
    const high = policy([{ type: 'max_tokens', limit: 300 }], { priority: 2 });
    expect(decide([low, high]).modifiedAction?.maxTokens).toBe(200);
    expect(decide([{ ...low, priority: 3 }, high]).modifiedAction?.maxTokens).toBe(200);
    const raise = policy([{ type: 'max_tokens', limit: 10_000 }]);
    expect(decide([low, raise]).modifiedAction?.maxTokens).toBe(200);
  });

  it('max_tokens clamps a max_tokens that is not a number it can compare (fail closed)', () => {
    const d = decide([policy([{ type: 'max_tokens', limit: 100 }])], action({ maxTokens: Number.NaN }));
    expect(d).toMatchObject({ verdict: 'modify', modifiedAction: { maxTokens: 100 } });
  });

  it('compares action types folded and in lower case, as tool names: an evaluate caller cannot spell its way out (QA)', () => {
    const scoped = policy([{ type: 'deny_pattern', pattern: 'rm -rf' }], {
      appliesTo: { actionTypes: ['tool.call'] },
    });
    const call = (type: string) =>
      action({ type, messages: [{ role: 'user', content: 'rm -rf /' }], estimatedCostUsd: 0 });
    for (const type of ['tool.call', 'Tool.Call', 'tool\u200b.call', 'ｔｏｏｌ.call'])
      expect([type, decide([scoped], call(type)).verdict]).toEqual([type, 'deny']);
    expect(decide([scoped], call('tool.calls')).verdict).toBe('allow');
    // The cost rule's fail-closed deny of an llm.invoke without an estimate, whatever its spelling.
    const cap = policy([{ type: 'max_cost_per_call_usd', limit: 1 }]);
    expect(codes(decide([cap], without('estimatedCostUsd', { type: 'LLM.INVOKE' })))).toEqual([
      'cost_unknown',
    ]);
  });

  it('allow_models_only denies an llm.invoke that names no model, as a cost rule one with no estimate (QA)', () => {
    const only = policy([{ type: 'allow_models_only', models: ['gpt-4o'] }]);
    expect(codes(decide([only], without('model')))).toEqual(['model_unknown']);
    expect(decide([only], without('model', { type: 'tool.call' })).verdict).toBe('allow');
    expect(decide([only]).verdict).toBe('allow');
  });

  it('max_cost_per_call_usd denies an estimate over the limit, not one at or under it', () => {
    const rule = (limit: number) => policy([{ type: 'max_cost_per_call_usd', limit }]);
    expect(codes(decide([rule(0.01)]))).toEqual(['cost_per_call_exceeded']);
    expect(decide([rule(0.02)]).verdict).toBe('allow');
    expect(decide([rule(0.05)]).verdict).toBe('allow');
  });

  it('max_cost_per_call_usd fails closed on an llm.invoke without an estimate or with one it cannot compare', () => {
    const p = policy([{ type: 'max_cost_per_call_usd', limit: 1 }]);
    expect(codes(decide([p], without('estimatedCostUsd')))).toEqual(['cost_unknown']);
    expect(codes(decide([p], action({ estimatedCostUsd: Number.NaN })))).toEqual(['cost_unknown']);
    expect(codes(decide([p], action({ type: 'tool.call', estimatedCostUsd: Number.NaN })))).toEqual([
      'cost_unknown',
    ]);
    // Other action types carry no cost unless they say so: nothing to judge.
    expect(decide([p], without('estimatedCostUsd', { type: 'tool.call' })).verdict).toBe('allow');
  });

  it('require_approval asks only when every listed condition holds', () => {
    const when = (w: Extract<Rule, { type: 'require_approval' }>['when'], a = action()) =>
      decide([policy([{ type: 'require_approval', when: w, approversRequired: 1, timeoutSeconds: 60 }])], a)
        .verdict;
    const shell = action({ tool: { name: 'shell', arguments: {} } });
    expect(when({})).toBe('require_approval');
    expect(when({ models: ['gpt-4o'] })).toBe('require_approval');
    expect(when({ models: ['claude'] })).toBe('allow');
    expect(when({ models: ['gpt-4o'] }, without('model'))).toBe('allow');
    expect(when({ tools: ['shell'] })).toBe('allow');
    expect(when({ tools: ['shell'] }, shell)).toBe('require_approval');
    expect(when({ models: ['gpt-4o'], tools: ['shell'] }, shell)).toBe('require_approval');
    expect(when({ models: ['claude'], tools: ['shell'] }, shell)).toBe('allow');
    expect(when({ tools: ['shell'] }, action({ offeredTools: [fn('shell')] }))).toBe('require_approval');
    expect(when({ minEstimatedCostUsd: 0.02 })).toBe('require_approval');
    expect(when({ minEstimatedCostUsd: 0.03 })).toBe('allow');
    // A cost it cannot judge asks a person rather than letting the call through.
    expect(when({ minEstimatedCostUsd: 0.03 }, without('estimatedCostUsd'))).toBe('require_approval');
    expect(when({ minEstimatedCostUsd: 0.03 }, action({ estimatedCostUsd: Number.NaN }))).toBe(
      'require_approval',
    );
  });

  it('require_approval: the strictest requirement wins (most approvers, shortest timeout)', () => {
    const ask = (approversRequired: number, timeoutSeconds: number, priority: number) =>
      policy([{ type: 'require_approval', when: {}, approversRequired, timeoutSeconds }], { priority });
    const first = ask(2, 600, 5);
    const d = decide([ask(1, 60, 1), first, ask(3, 3600, 0)]);
    expect(d.verdict).toBe('require_approval');
    expect(d.approval).toEqual({ policyId: first.id, approversRequired: 3, timeoutSeconds: 60 });
    expect(codes(d)).toEqual(['approval_required', 'approval_required', 'approval_required']);
  });
});

describe('precedence: deny > require_approval > modify > allow', () => {
  const pairs = ORDER.flatMap((a) => ORDER.map((b) => [a, b] as const));
  it.each(pairs)('%s with %s gives the stronger, with only its reasons', (a, b) => {
    const policies = [a, b].flatMap((v) => (RULE_FOR[v] ? [policy([RULE_FOR[v] as Rule])] : []));
    const expected = ORDER[Math.max(ORDER.indexOf(a), ORDER.indexOf(b))] as Verdict;
    const d = decide(policies);
    expect(d.verdict).toBe(expected);
    const code = CODE_FOR[expected];
    expect(codes(d)).toEqual(code ? (a === b ? [code, code] : [code]) : []);
    // A require_approval keeps the modifications: the approver is asked about what would run.
    const modifies = [a, b].includes('modify');
    expect(d.modifiedAction !== null).toBe(
      expected === 'modify' || (expected === 'require_approval' && modifies),
    );
    expect(d.approval !== null).toBe(expected === 'require_approval');
  });

  it('does not depend on priority: a low-priority deny beats a high-priority modify', () => {
    const d = decide([
      policy([RULE_FOR.modify as Rule], { priority: 100 }),
      policy([deny], { priority: -100 }),
    ]);
    expect(d.verdict).toBe('deny');
  });
});

describe('modifications compose', () => {
  const rename = (from: string, to: string, over: Partial<Policy>) =>
    policy([{ type: 'redact_pattern', pattern: from, replacement: to }], over);
  const cats = action({ messages: [{ role: 'user', content: 'cat dog' }] });

  it('applies redactions in priority order, then by id', () => {
    // Two that overlap: the first takes the shared "dog", and the second no longer matches.
    const a = rename('cat dog', 'pets', { priority: 10 });
    const b = rename('dog', 'cow', { priority: 5 });
    expect(decide([b, a], cats).modifiedAction?.messages?.[0]?.content).toBe('pets');
    expect(decide([{ ...b, priority: 20 }, a], cats).modifiedAction?.messages?.[0]?.content).toBe('cat cow');
    const tieFirst = rename('cat dog', 'pets', { id: 'pol_a' });
    const tieSecond = rename('dog', 'cow', { id: 'pol_b' });
    expect(decide([tieSecond, tieFirst], cats).modifiedAction?.messages?.[0]?.content).toBe('pets');
  });

  it('redacts again what a later redaction forms anew, and names each rule once (QA)', () => {
    // "dog" goes first, then "cat" becomes "dog": that "dog" is taken out too, not sent.
    const first = rename('dog', 'cow', { priority: 20 });
    const second = rename('cat', 'dog', { priority: 10 });
    const d = decide([first, second], cats);
    expect(d.modifiedAction?.messages?.[0]?.content).toBe('cow cow');
    expect(d.reasons.map((r) => r.policyId)).toEqual([first.id, second.id]);
    // A rule that did not match the text as asked, matching only what another made of it.
    const secret = rename('secret', '[S]', { priority: 20 });
    const dropX = rename('x', '', { priority: 10 });
    const reformed = decide([secret, dropX], action({ messages: [{ role: 'user', content: 'my secxret' }] }));
    expect(reformed.verdict).toBe('modify');
    expect(reformed.modifiedAction?.messages?.[0]?.content).toBe('my [S]');
    expect(reformed.reasons.map((r) => r.policyId)).toEqual([dropX.id, secret.id]);
    // A deny of what a step on the way showed, gone from the request as it will run, does not deny.
    const denySecret = policy([{ type: 'deny_pattern', pattern: 'secret' }]);
    const past = decide(
      [secret, dropX, denySecret],
      action({ messages: [{ role: 'user', content: 'my secxret' }] }),
    );
    expect(past).toMatchObject({ verdict: 'modify', modifiedAction: { messages: [{ content: 'my [S]' }] } });
    // Two that form each other's match at every pass: denied once the passes run out.
    const xy = rename('x', 'y', { priority: 20 });
    const yx = rename('y', 'x', { priority: 10 });
    expect(decide([xy, yx], action({ messages: [{ role: 'user', content: 'x' }] }))).toMatchObject({
      verdict: 'deny',
      reasons: [{ code: 'policy_evaluation_failed' }],
    });
    // A replacement its own pattern matches is not taken for a new match: it does not grow, and
    // what another redaction re-forms beside it is still taken out (QA: a key leaked).
    const tagged = decide(
      [rename('secret', '[secret]', { priority: 20 }), rename('x', '', { priority: 10 })],
      action({ messages: [{ role: 'user', content: 'a secret, a secxret' }] }),
    );
    expect(tagged.modifiedAction?.messages?.[0]?.content).toBe('a [secret], a [secret]');
    const key = rename('sk-[A-Za-z0-9]{6,}', '[sk-redacted]', { priority: 20 });
    const tags = rename('<[^>]*>', '', { priority: 10 });
    const split = decide(
      [key, tags],
      action({ messages: [{ role: 'user', content: 'sk-abc<b>defghijklmn' }] }),
    );
    expect(split.modifiedAction?.messages?.[0]?.content).toBe('[sk-redacted]');
    // A match that reaches past a copy of a replacement is new, even one the user typed (QA:
    // the secret after it was sent).
    const pw = rename('(?i)password\\s*=\\s*\\S+', 'password=[REDACTED]', { priority: 20 });
    for (const content of [
      'pass\u200bword=[REDACTED]hunter2',
      'ｐａｓｓｗｏｒｄ=[REDACTED]hunter2',
      'pässword=[REDACTED]hunter2',
      'passDEBUGword=[REDACTED]hunter2',
    ]) {
      const d = decide(
        [pw, rename('DEBUG', '', { priority: 10 })],
        action({ messages: [{ role: 'user', content }] }),
      );
      expect({ content, sent: d.modifiedAction?.messages?.[0]?.content }).toEqual({
        content,
        sent: 'password=[REDACTED]',
      });
    }
    // Two rules that match each other's replacements settle instead of taking turns (QA: denied).
    const anyKey = rename('\\b[A-Z0-9]{8,}\\b', '[KEY]', { priority: 30 });
    const both = decide(
      [anyKey, pw],
      action({ messages: [{ role: 'user', content: 'password=hunter2 ABCDEFGH12' }] }),
    );
    expect(both.modifiedAction?.messages?.[0]?.content).toBe('password=[REDACTED] [KEY]');
    // Rules that match part of each other's replacements settle (QA: denied after 8 passes), and
    // leave each other's replacements whole (QA: "[[KEY]]"), in either order.
    const word = rename('(?i)\\bkey\\b', '[CREDENTIAL]', { priority: 20 });
    const mutual = decide(
      [anyKey, word],
      action({ messages: [{ role: 'user', content: 'my key is ABCDEFGH12' }] }),
    );
    expect(mutual.modifiedAction?.messages?.[0]?.content).toBe('my [CREDENTIAL] is [KEY]');
    for (const priority of [40, 10]) {
      const ssn = rename('\\d{3}-\\d{2}-\\d{4}', '[REDACTED]', { priority });
      const said = action({ messages: [{ role: 'user', content: 'ssn 123-45-6789 and key ABCDEFGH12' }] });
      expect(decide([ssn, anyKey], said).modifiedAction?.messages?.[0]?.content).toBe(
        'ssn [REDACTED] and key [KEY]',
      );
    }
    // A match skipped as part of a replacement does not hide a longer one that starts inside it
    // (QA: typed copies of `sk-redacted` carried a key past it, sent as they were).
    const longer = decide(
      [rename('ab|b\\w+', 'Xab', {})],
      action({ messages: [{ role: 'user', content: 'Xabzz' }] }),
    );
    expect(longer.modifiedAction?.messages?.[0]?.content).toBe('XaXab');
    const typed = 'sk-redactedsk-redactedabc123SECRET';
    const bare = decide(
      [rename('sk-\\w{6,}', 'sk-redacted', {})],
      action({ messages: [{ role: 'user', content: typed }] }),
    );
    expect(bare.modifiedAction?.messages?.[0]?.content).not.toBe(typed);
    // A rename meets words another rule wrote however many stand side by side (QA: "dogdog").
    const renames = decide(
      [rename('x', 'dog', { priority: 20 }), rename('dog', 'cow', { priority: 10 })],
      action({ messages: [{ role: 'user', content: 'x dogdog' }] }),
    );
    expect(renames.modifiedAction?.messages?.[0]?.content).toBe('cow cowcow');
    // Nor is it a reason to send the text folded: its accents stay (QA: they were taken off).
    const accents = decide(
      [rename('(?i)password\\s*=\\s*\\S+', 'password=[REDACTED]', {})],
      action({ messages: [{ role: 'user', content: 'Grüße aus Zürich; password=hunter2' }] }),
    );
    expect(accents.modifiedAction?.messages?.[0]?.content).toBe('Grüße aus Zürich; password=[REDACTED]');
    // One that its own replacement matches but leaves as it is takes out what another re-formed,
    // in either order (QA: "password=hunter2" was sent).
    for (const [first, second] of [
      [20, 10],
      [10, 20],
    ]) {
      const password = rename('(?i)password\\s*=\\s*\\S+', 'password=[REDACTED]', { priority: first });
      const debug = rename('DEBUG', '', { priority: second });
      const said = action({ messages: [{ role: 'user', content: 'passDEBUGword=hunter2 ok' }] });
      expect(decide([password, debug], said).modifiedAction?.messages?.[0]?.content).toBe(
        'password=[REDACTED] ok',
      );
    }
  });

  it("stops a redaction whose matches' searches run long, and denies: the budget cannot count them before (QA)", () => {
    // Each search for the next match scans on to the end of the word for a possible ".exe".
    const p = policy([{ type: 'redact_pattern', pattern: 'password|\\w+\\.exe', replacement: '[X]' }]);
    const d = decide([p], action({ messages: [{ role: 'user', content: 'zpassword'.repeat(5_000) }] }));
    expect(d).toMatchObject({ verdict: 'deny', reasons: [{ code: 'policy_evaluation_failed' }] });
    expect(d.reasons[0]?.message).toContain('the redaction was stopped');
  });

  it('applies redactions and the clamp together, with a reason for each, in priority order', () => {
    const clamp = policy([{ type: 'max_tokens', limit: 50 }], { priority: 2 });
    const redact = rename('\\d', '#', { priority: 1 });
    const d = decide([redact, clamp]);
    expect(d.reasons.map((r) => [r.policyId, r.code])).toEqual([
      [clamp.id, 'max_tokens_clamped'],
      [redact.id, 'redacted'],
    ]);
    expect(d.modifiedAction).toMatchObject({
      maxTokens: 50,
      messages: [{ content: 'you are helpful' }, { content: 'my card is ####-####-####-####' }],
    });
  });
});

describe('applies_to', () => {
  const shell = { name: 'shell', arguments: {} };
  it.each([
    ['empty: every action', {}, action(), context, true],
    ['agent listed', { agentIds: ['agt_1'] }, action(), context, true],
    ['agent not listed', { agentIds: ['agt_2'] }, action(), context, false],
    ['agents listed, no agent', { agentIds: ['agt_1'] }, action(), { agentId: null, sessionId: null }, false],
    ['model listed', { models: ['gpt-4o'] }, action(), context, true],
    ['model not listed', { models: ['claude'] }, action(), context, false],
    ['models listed, no model', { models: ['gpt-4o'] }, without('model'), context, false],
    ['action type listed', { actionTypes: ['llm.invoke'] }, action(), context, true],
    ['action type not listed', { actionTypes: ['tool.call'] }, action(), context, false],
    ['tool listed', { tools: ['shell'] }, action({ tool: shell }), context, true],
    ['tool not listed', { tools: ['search'] }, action({ tool: shell }), context, false],
    ['tools listed, no tool', { tools: ['shell'] }, action(), context, false],
    [
      'tool listed, offered',
      { tools: ['shell'] },
      action({ offeredTools: [fn('search'), fn('shell')] }),
      context,
      true,
    ],
    [
      'tool not listed, offered',
      { tools: ['shell'] },
      action({ offeredTools: [fn('search')] }),
      context,
      false,
    ],
    [
      'all dimensions match',
      { agentIds: ['agt_1'], models: ['gpt-4o'], tools: ['shell'] },
      action({ tool: shell }),
      context,
      true,
    ],
    ['one dimension misses', { agentIds: ['agt_1'], models: ['claude'] }, action(), context, false],
  ])('%s', (_name, appliesTo, a, ctx, applies) => {
    // A rule that speaks on every action: only applies_to decides whether the policy is heard.
    const p = policy([RULE_FOR.require_approval as Rule], { appliesTo });
    expect(decide([p], a, ctx).verdict).toBe(applies ? 'require_approval' : 'allow');
  });

  it('skips a disabled policy, enforced or shadow', () => {
    expect(decide([policy([deny], { enabled: false })]).verdict).toBe('allow');
    expect(decide([policy([deny], { enabled: false, mode: 'shadow' })]).shadowReasons).toEqual([]);
  });
});

describe('shadow mode', () => {
  it('never changes the verdict nor the action, and records what it would have decided', () => {
    const shadow = policy([deny, RULE_FOR.modify as Rule], { mode: 'shadow' });
    const d = decide([shadow]);
    expect(d).toMatchObject({ verdict: 'allow', reasons: [], modifiedAction: null, approval: null });
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

  it('leaves an enforced modify as it is: same verdict, reasons and modified action', () => {
    const enforced = policy([{ type: 'redact_pattern', pattern: '\\d', replacement: '#' }]);
    const shadows = [
      policy([deny], { mode: 'shadow', priority: 9 }),
      policy([{ type: 'redact_pattern', pattern: 'card', replacement: 'X' }], {
        mode: 'shadow',
        priority: 9,
      }),
      policy([{ type: 'max_tokens', limit: 1 }], { mode: 'shadow', priority: -9 }),
    ];
    const before = decide([enforced]);
    const after = decide([enforced, ...shadows]);
    expect({ ...after, shadowReasons: [] }).toEqual(before);
    expect(after.shadowReasons.map((r) => r.verdict)).toEqual(['deny', 'modify', 'modify']);
  });

  it('records a shadow policy that cannot be evaluated as a would-be deny, and enforces nothing', () => {
    const broken = policy([{ type: 'deny_pattern', pattern: '(a' }], { mode: 'shadow' });
    const d = decide([broken]);
    expect(d.verdict).toBe('allow');
    expect(d.shadowReasons).toEqual([
      expect.objectContaining({ policyId: broken.id, code: 'policy_evaluation_failed', verdict: 'deny' }),
    ]);
  });
});

describe('failing closed', () => {
  const failed = (d: PolicyDecision, p: Policy) => {
    expect(d.verdict).toBe('deny');
    expect(d.modifiedAction).toBeNull();
    expect(d.reasons).toContainEqual(
      expect.objectContaining({
        policyId: p.id,
        code: 'policy_evaluation_failed',
        message: expect.stringContaining(p.name),
      }),
    );
  };

  const exploded = (d: PolicyDecision) =>
    expect(d.reasons.map((r) => r.message).join()).toContain('engine exploded');

  it('denies, naming the policy, when matching throws', () => {
    const p = policy([{ type: 'deny_pattern', pattern: 'x' }]);
    // Its size is read on an empty text (pattern-budget.ts); matching the action's texts throws.
    const regex = { matcher: (text: string) => (text === '' ? { programSize: () => 1 } : boom()) };
    const d = evaluatePolicies(withBrokenRegex([p], regex), action(), context);
    failed(d, p);
    exploded(d);
  });

  it('denies, naming the policy, when applying its redaction throws', () => {
    const p = policy([{ type: 'redact_pattern', pattern: 'x', replacement: 'y' }]);
    const regex = { matcher: () => ({ programSize: () => 1, find: () => true, start: boom }) };
    const d = evaluatePolicies(withBrokenRegex([p], regex), action(), context);
    failed(d, p);
    exploded(d);
  });

  it('denies, naming the policy, when a pattern rule reaches the engine without its compiled pattern', () => {
    const p = policy([{ type: 'deny_pattern', pattern: 'x' }]);
    failed(evaluatePolicies(withBrokenRegex([p], null), action(), context), p);
    const r = policy([{ type: 'redact_pattern', pattern: 'x', replacement: 'y' }]);
    failed(evaluatePolicies(withBrokenRegex([r], null), action(), context), r);
  });

  it('denies, naming the policy, on a rule type it does not know (never ignores a rule)', () => {
    const p = policy([{ type: 'deny_everything' } as never]);
    failed(decide([p]), p);
  });

  it('denies, naming the policy, when its applies_to is malformed', () => {
    const p = policy([deny], { appliesTo: null as never });
    failed(decide([p]), p);
  });

  it('keeps the other policies’ deny reasons beside the failure', () => {
    const broken = policy([{ type: 'deny_pattern', pattern: '(a' }], { priority: 1 });
    const other = policy([deny]);
    const d = decide([other, broken]);
    expect(d.reasons.map((r) => [r.policyId, r.code])).toEqual([
      [broken.id, 'policy_evaluation_failed'],
      [other.id, 'model_denied'],
    ]);
  });

  it.each([
    ['an invalid regex', '(a', undefined],
    ['a backreference', '(a)\\1', undefined],
    ['a lookahead', 'a(?=b)', undefined],
    ['a lookbehind', '(?<=a)b', undefined],
    ['an unknown flag', 'a', 'g'],
    ['a pattern over the size limit', 'a'.repeat(MAX_PATTERN_LENGTH + 1), undefined],
    ['counted repetitions adding up past the limit', 'x{999}'.repeat(2), undefined],
    ['a pattern compiling past the instruction limit', '(?i)(?:\\w*a){999}[^\\w]', undefined],
  ])(
    'refuses %s in validatePattern, and the engine denies it (the same compile path)',
    (_n, pattern, flags) => {
      expect(validatePattern(pattern, flags)).toEqual(expect.any(String));
      const p = policy([{ type: 'deny_pattern', pattern, ...(flags ? { flags } : {}) }]);
      failed(decide([p], action({ model: 'other' })), p);
      const r = policy([{ type: 'redact_pattern', pattern, replacement: 'x' }]);
      if (!flags) failed(decide([r]), r);
    },
  );

  it('validatePattern accepts RE2 syntax up to the size limit, with the i, m and s flags', () => {
    expect(validatePattern('a'.repeat(MAX_PATTERN_LENGTH), 'ims')).toBeNull();
    expect(validatePattern('(a+)+$')).toBeNull();
    expect(validatePattern(`x{${MAX_REPEAT_TOTAL}}`)).toBeNull();
    expect(validatePattern('\\bfoo\\b|\\p{L}+|[[:alpha:]]', 'i')).toBeNull();
  });
});

describe('regexes that cannot stall a worker', () => {
  const catastrophic = policy([{ type: 'deny_pattern', pattern: '(a+)+$' }]);
  const redactRuns = policy([{ type: 'redact_pattern', pattern: '(a+)+b', replacement: '-' }]);

  it('evaluates (a+)+$ on 30 a’s and a "!"', () => {
    const short = action({ messages: [{ role: 'user', content: `${'a'.repeat(30)}!` }] });
    expect(decide([catastrophic], short).verdict).toBe('allow');
  });

  it('evaluates (a+)+$ and a redaction on a 100,000-character message', () => {
    const long = action({ messages: [{ role: 'user', content: `${'a'.repeat(100_000)}!` }] });
    expect(decide([catastrophic], long).verdict).toBe('allow');
    const runs = action({ messages: [{ role: 'user', content: `${'a'.repeat(100_000)}b!` }] });
    expect(decide([redactRuns], runs).modifiedAction?.messages?.[0]?.content).toBe('-!');
  });

  it(`refuses a pattern compiling to more than ${MAX_PATTERN_PROGRAM} instructions (it held a worker a minute on 900 KB)`, () => {
    expect(validatePattern('(?i)(?:\\w*a){999}[^\\w]')).toMatch(/compiles to 3000 instructions/);
    expect(validatePattern('(?:\\w*a){400}[^\\w]')).toBeNull();
  });

  describe('what one evaluation may scan: characters × (program size + 20), at most PATTERN_WORK_BUDGET', () => {
    // x{999}y compiles to 1,002 instructions yet finds no "x" at once: the budget judges the worst
    // case from the sizes alone, and these tests stay fast.
    const wide = (): Rule => ({ type: 'deny_pattern', pattern: 'x{999}y' });
    const text = (characters: number) =>
      action({ model: 'other', messages: [{ role: 'user', content: 'ab'.repeat(characters / 2) }] });
    const scans = () => jest.spyOn(RE2JS.prototype, 'matcher');
    afterEach(() => jest.restoreAllMocks());

    it('a rule whose worst case is past it denies its policy, naming it, without scanning', () => {
      const p = policy([wide()]);
      const matcher = scans();
      const d = decide([p], text(100_000)); // 100,000 × 1,022 > 10^8
      expect(d.verdict).toBe('deny');
      expect(d.reasons).toEqual([
        expect.objectContaining({ policyId: p.id, code: 'policy_evaluation_failed' }),
      ]);
      // One text: its 100,000 characters and the one each text weighs besides (TEXT_WEIGHT).
      expect(d.reasons[0]?.message).toContain('1002 instructions over 100001 characters');
      expect(matcher.mock.calls.filter(([t]) => t !== '')).toEqual([]);
      expect(PATTERN_WORK_BUDGET).toBe(100_000_000);
    });

    it('is spent across the rules of every enforced policy: the fourth that no longer fits denies', () => {
      const ps = [4, 3, 2, 1].map((priority) => policy([wide()], { priority }));
      const d = decide(ps, text(30_000)); // 3.07 × 10^7 each
      expect(d.reasons.map((r) => [r.policyId, r.code])).toEqual([[ps[3]?.id, 'policy_evaluation_failed']]);
    });

    it('shadow policies spend from a budget of their own, so they never change the verdict', () => {
      const shadows = [3, 2, 1].map((priority) => policy([wide()], { priority, mode: 'shadow' }));
      const d = decide([...shadows, policy([wide()])], text(30_000)); // 1.23 × 10^8 in all
      expect(d.verdict).toBe('allow');
      expect(d.shadowReasons).toEqual([]);
    });

    it('one rule may scan at most a third of it, so no single scan holds the loop for the whole budget', () => {
      const p = policy([wide()]);
      const d = decide([p], text(40_000)); // 4.09 × 10^7: past a rule's share, within the budget
      expect(d.reasons).toEqual([
        expect.objectContaining({ policyId: p.id, code: 'policy_evaluation_failed' }),
      ]);
      expect(RULE_WORK_BUDGET).toBe(33_000_000);
    });

    it('a rule reached after the evaluation took past 500 ms is not run: it denies its policy', () => {
      let now = 0;
      const budget = new PatternBudget(() => now);
      const regex = RE2JS.compile('secret');
      const small = text(10);
      expect(() => budget.spend(regex, small)).not.toThrow();
      now = EVALUATION_MAX_MS + 1;
      expect(() => budget.spend(regex, small)).toThrow(/took 501 ms, past 500 ms/);
    });

    it('ten plain patterns over a 200,000-character prompt fit, and judge it', () => {
      const plain = Array.from({ length: 10 }, (_, i): Rule => ({
        type: 'deny_pattern',
        pattern: `secret-${i}`,
      }));
      expect(decide([policy(plain)], text(200_000)).verdict).toBe('allow');
      const leaked = action({ messages: [{ role: 'user', content: `${'ab'.repeat(100_000)} secret-7` }] });
      expect(codes(decide([policy(plain)], leaked))).toEqual(['pattern_denied']);
    });
  });

  it('compiles every pattern once per policy set, never while evaluating', () => {
    const compileSpy = jest.spyOn(RE2JS, 'compile');
    try {
      const compiled = compile([
        policy([
          { type: 'deny_pattern', pattern: 'x' },
          { type: 'redact_pattern', pattern: '\\d', replacement: '#' },
        ]),
        policy([{ type: 'deny_pattern', pattern: 'y', flags: 'i' }, deny]),
      ]);
      expect(compileSpy).toHaveBeenCalledTimes(3);
      for (let i = 0; i < 5; i++) evaluatePolicies(compiled, action({ model: 'other' }), context);
      expect(compileSpy).toHaveBeenCalledTimes(3);
    } finally {
      compileSpy.mockRestore();
    }
  });

  it('orders policies by priority (highest first), then id, and drops disabled ones', () => {
    const ps = [
      policy([], { id: 'pol_b', priority: 1 }),
      policy([], { id: 'pol_c', priority: 5 }),
      policy([], { id: 'pol_a', priority: 1 }),
      policy([], { id: 'pol_d', priority: 9, enabled: false }),
    ];
    expect(compile(ps, 3)).toMatchObject({ policyVersion: 3, orgId: 'org_1' });
    expect(compile(ps).policies.map((p) => p.policy.id)).toEqual(['pol_c', 'pol_a', 'pol_b']);
  });
});

describe('documented limits and the action digest', () => {
  it('exports the size limits the store enforces', () => {
    expect({ MAX_PATTERN_LENGTH, MAX_RULES_PER_POLICY, MAX_POLICIES_PER_ORG, MAX_LIST_ITEMS }).toEqual({
      MAX_PATTERN_LENGTH: 1000,
      MAX_RULES_PER_POLICY: 50,
      MAX_POLICIES_PER_ORG: 200,
      MAX_LIST_ITEMS: 500,
    });
  });

  it('digests the canonical JSON (RFC 8785): key order does not matter, content does', () => {
    const a = { type: 'llm.invoke', model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] };
    const reordered = { messages: [{ content: 'hi', role: 'user' }], model: 'gpt-4o', type: 'llm.invoke' };
    const expected = createHash('sha256')
      .update(canonicalize(a) ?? '')
      .digest('hex');
    expect(actionDigest(a)).toBe(expected);
    expect(actionDigest(a)).toMatch(/^[0-9a-f]{64}$/);
    expect(actionDigest(reordered)).toBe(expected);
    expect(actionDigest({ ...a, messages: [{ role: 'user', content: 'hi!' }] })).not.toBe(expected);
  });
});
