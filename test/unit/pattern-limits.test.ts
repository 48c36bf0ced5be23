import { validatePattern } from '../../domain/policy/limits';

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
});
