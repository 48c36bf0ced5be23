import { findUnstorable, MAX_BODY_DEPTH } from '../../api/http/unstorable-input';

/** `levels` arrays inside each other, the innermost holding `inner`. */
const nested = (levels: number, inner: unknown = 1): unknown => {
  let value = inner;
  for (let i = 0; i < levels; i++) value = [value];
  return value;
};

const paths = (input: unknown) => findUnstorable(input, 'body').map((d) => d.path);

describe('findUnstorable', () => {
  it('accepts ordinary JSON, surrogate pairs (emoji) included', () => {
    expect(
      findUnstorable({ name: 'bot 🤖', tags: ['𝄞', 1.5, null, true], meta: { '🔑': 'v' } }, 'body'),
    ).toEqual([]);
  });

  it('names a NUL or a lone surrogate in a value, high or low, by its path', () => {
    expect(paths({ a: 'x\u0000', b: ['\ud800'], c: { d: '\udc00x' }, e: 'x\ud83d' })).toEqual([
      'a',
      'b.0',
      'c.d',
      'e',
    ]);
  });

  it('names the object holding a bad key, not the key itself', () => {
    const [detail] = findUnstorable({ metadata: { 'k\u0000': 1 } }, 'body');
    expect(detail).toEqual({ path: 'metadata', message: 'metadata: a key must not contain NUL (\\u0000)' });
  });

  it('refuses numbers that JSON read as Infinity', () => {
    expect(paths(JSON.parse('{"n": 1e400, "m": [-1e400], "ok": 5e-324}'))).toEqual(['n', 'm.0']);
  });

  it(`allows ${MAX_BODY_DEPTH} levels of nesting and refuses one more, with a shortened path`, () => {
    expect(findUnstorable(nested(MAX_BODY_DEPTH), 'body')).toEqual([]);
    const [detail] = findUnstorable({ metadata: nested(MAX_BODY_DEPTH) }, 'body');
    expect(detail?.path).toBe('metadata.0.0.0.…');
    expect(detail?.message).toContain(`deeper than ${MAX_BODY_DEPTH} levels`);
  });

  it('walks 100,000 levels without overflowing the stack', () => {
    expect(findUnstorable(nested(100_000), 'body')).toHaveLength(1);
  });

  it('names the input itself for a problem at its root, and stops after ten problems', () => {
    expect(paths('\u0000')).toEqual(['body']);
    expect(
      findUnstorable(
        Array.from({ length: 1000 }, () => '\u0000'),
        'body',
      ),
    ).toHaveLength(10);
  });
});
