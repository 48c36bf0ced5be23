import { RE2JS } from 're2js';
import {
  checkPatternsInTurns,
  COMPILED_SETS_BUDGET,
  compiledSetsBudget,
  keptPatternChecks,
  patternProgramOf,
  validatePattern,
  validateRedaction,
} from '../../domain/policy/limits';
import { PolicyBody } from '../../api/schemas/policies.schemas';

describe('policy patterns', () => {
  it('accepts RE2 patterns, refuses backreferences and lookaround', () => {
    expect(validatePattern('\\d{4}-\\d{4}')).toBeNull();
    expect(validatePattern('(a)\\1')).toMatch(/not a valid RE2 regex/);
    expect(validatePattern('a(?=b)')).toMatch(/not a valid RE2 regex/);
  });

  it('refuses counted repetitions that add up past 1,000, which would make compiling slow', () => {
    expect(validatePattern('x{999}')).toBeNull();
    expect(validatePattern('x{500}y{500}')).toBeNull();
    expect(validatePattern('x{999}'.repeat(2))).toMatch(/add up to at most 1000/);
    expect(validatePattern('x{2,600}y{1,401}')).toMatch(/add up to at most 1000/);
    // A hex escape in braces is a character, not a repetition (QA: \x{2013} was refused).
    expect(validatePattern('[\\x{2013}\\x{2014}]')).toBeNull();
    expect(validatePattern('\\x{2013}{999}')).toBeNull();
    expect(validatePattern('\\x{2013}{999}a{2}')).toMatch(/add up to at most 1000/);
    expect(validatePattern('\\\\{999}\\\\{2}')).toMatch(/add up to at most 1000/);
  });

  it('counts a pattern it has just validated without compiling it again (a policy write does both)', () => {
    const pattern = `(?:\\w*a){400}[^\\w]${Date.now()}`;
    const compile = jest.spyOn(RE2JS, 'compile');
    try {
      expect(validatePattern(pattern)).toBeNull();
      expect(compile).toHaveBeenCalledTimes(1);
      const size = RE2JS.compile(pattern).matcher('').programSize();
      expect(patternProgramOf([{ type: 'deny_pattern', pattern }])).toBe(size);
      expect(patternProgramOf([{ type: 'redact_pattern', pattern, replacement: 'x' }])).toBe(size);
      expect(compile).toHaveBeenCalledTimes(2); // the test's own, above
      // One with other flags, or not seen before, is compiled.
      expect(patternProgramOf([{ type: 'deny_pattern', pattern, flags: 'i' }])).toBe(size);
      expect(compile).toHaveBeenCalledTimes(3);
    } finally {
      compile.mockRestore();
    }
  });
});

describe('the compiled sets a process keeps', () => {
  it('take at most a quarter of a small heap, and COMPILED_SETS_BUDGET of a large one', () => {
    const mb = 1024 * 1024;
    // --max-old-space-size=256 (about 300 MB of heap limit): 64 MB of sets, about five orgs at their limit.
    expect(compiledSetsBudget(256 * mb)).toBe(Math.floor((256 * mb) / 4 / 130));
    expect(compiledSetsBudget(256 * mb) * 130).toBeLessThanOrEqual(64 * mb);
    expect(compiledSetsBudget(4 * 1024 * mb)).toBe(COMPILED_SETS_BUDGET);
  });
});

describe("a policy body's patterns, checked in turns before its schema runs", () => {
  const heavy = (i: number) => `(?:\\w*a){400}[^\\w]${Date.now()}-${i}`;

  it('compiles one pattern per turn, and leaves the schema and the org count nothing to compile', async () => {
    const rules = [
      { type: 'deny_pattern', pattern: heavy(1) },
      { type: 'max_tokens', limit: 5 },
      { type: 'deny_pattern', pattern: heavy(2), flags: 'i' },
      { type: 'redact_pattern', pattern: heavy(3), replacement: '#' },
      { type: 'deny_pattern', pattern: 42 }, // malformed: left to the schema
      'not a rule',
    ];
    const compile = jest.spyOn(RE2JS, 'compile');
    try {
      let turns = 0;
      const ms = await checkPatternsInTurns(rules, async () => {
        turns += 1;
      });
      expect(turns).toBe(3);
      expect(ms).toBeGreaterThan(0); // what compiling took, to charge the org
      const compiledBefore = compile.mock.calls.length;
      expect(compiledBefore).toBe(4); // the flagged one twice: as the schema and as the count check it
      const body = PolicyBody.safeParse({ name: 'p', rules: rules.slice(0, 4) });
      expect(body.success).toBe(true);
      expect(patternProgramOf(body.data?.rules.map((r) => ({ ...r })) as never)).toBeGreaterThan(3_000);
      expect(compile).toHaveBeenCalledTimes(compiledBefore);
    } finally {
      compile.mockRestore();
    }
  });

  it('reports what the schema reports for a pattern it refuses', async () => {
    const rules = [{ type: 'deny_pattern', pattern: '(a)\\1' }];
    await checkPatternsInTurns(rules, async () => {});
    const body = PolicyBody.safeParse({ name: 'p', rules });
    expect(body.success).toBe(false);
    expect(body.error?.issues[0]?.message).toMatch(/not a valid RE2 regex/);
  });

  it('ignores a body that holds no rules list', async () => {
    for (const rules of [undefined, null, 'x', { type: 'deny_pattern', pattern: 'a' }])
      await expect(checkPatternsInTurns(rules, () => Promise.reject(new Error('no turn')))).resolves.toBe(0);
  });

  it('keeps no answer for a pattern longer than a pattern may be', () => {
    const kept = keptPatternChecks();
    // 1,000 such answers kept could hold 1 GB.
    expect(validatePattern('x'.repeat(1_000_000))).toMatch(/at most 1000 characters/);
    expect(validateRedaction('y'.repeat(1_000_000))).toMatch(/at most 1000 characters/);
    expect(keptPatternChecks()).toBe(kept);
    expect(validatePattern(`short${Date.now()}`)).toBeNull();
    expect(keptPatternChecks()).toBe(kept + 1);
  });
});
