import { RE2JS } from 're2js';
import {
  COMPILED_SETS_BUDGET,
  compiledSetsBudget,
  patternProgramOf,
  validatePattern,
} from '../../domain/policy/limits';

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
