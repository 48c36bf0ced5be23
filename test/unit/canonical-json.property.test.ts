import canonicalize from 'canonicalize';
import fc from 'fast-check';
import { canonicalJson } from '../../domain/canonical-json';

/*
 * Every hash the audit chain, the decision log and the AGBOM serials hold was made with the
 * `canonicalize` package. canonicalJson replaced it, so it must give the same bytes for every JSON
 * value, or chains sealed before the change would no longer verify. `canonicalize` stays as a dev
 * dependency to be the oracle here.
 */

// Keys and strings from every UTF-16 code unit, lone surrogates included, and from whole code
// points (pairs): controls, quotes, backslashes, and keys that sort differently by code unit than
// by code point.
const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((u) => String.fromCharCode(u));
const unit = fc.oneof(codeUnit, fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }));
const text = fc.string({ unit, maxLength: 12 });
const key = fc.oneof(
  text,
  fc.constantFrom('', 'a', 'A', '_', '__proto__', 'é', '\u{1F600}', '\uff61', '\ud800', '1', '10', '2'),
);
const number = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
  fc.constantFrom(0, -0, 1e21, 1e-7, 123e-20, 5e-324, Number.MAX_SAFE_INTEGER, 2 ** 53 + 2, 0.1 + 0.2),
);

const { value } = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constant(null),
    fc.boolean(),
    number,
    text,
    fc.array(tie('value'), { maxLength: 5 }),
    fc.dictionary(key, tie('value'), { maxKeys: 6 }),
  ),
}));

describe('canonicalJson', () => {
  it('writes the bytes canonicalize writes, for any JSON value', () => {
    fc.assert(
      fc.property(value, (v) => canonicalJson(v) === canonicalize(v)),
      { numRuns: 5000 },
    );
  });

  it('writes them for values as the stores hand them back too', () => {
    fc.assert(
      fc.property(fc.jsonValue({ stringUnit: unit }), (v) => {
        const parsed: unknown = JSON.parse(JSON.stringify(v));
        return canonicalJson(parsed) === canonicalize(parsed);
      }),
      { numRuns: 2000 },
    );
  });

  it('leaves out undefined properties, writes undefined array items as null and dates as JSON does', () => {
    const v = { b: undefined, a: [undefined, new Date(Date.UTC(2026, 10, 27))], c: { z: 1, y: undefined } };
    expect(canonicalJson(v)).toBe('{"a":[null,"2026-11-27T00:00:00.000Z"],"c":{"z":1}}');
    expect(canonicalJson(v)).toBe(canonicalize(v));
  });

  it('sorts keys by UTF-16 code units, as RFC 8785 asks (its own example)', () => {
    // RFC 8785 section 3.2.3: the sorted order of these keys.
    const v = {
      '\u20ac': 'Euro Sign',
      '\r': 'Carriage Return',
      '\ufb33': 'Hebrew Letter Dalet With Dagesh',
      '1': 'One',
      '\u{1F600}': 'Emoji: Grinning Face',
      '\u0080': 'Control',
      '\u00f6': 'Latin Small Letter O With Diaeresis',
    };
    const inText = [...canonicalJson(v).matchAll(/:"([^"]+)"/g)].map((m) => m[1]);
    expect(inText).toEqual([
      'Carriage Return',
      'One',
      'Control',
      'Latin Small Letter O With Diaeresis',
      'Euro Sign',
      'Emoji: Grinning Face',
      'Hebrew Letter Dalet With Dagesh',
    ]);
  });

  it('refuses what RFC 8785 cannot write, as canonicalize did', () => {
    for (const bad of [NaN, Infinity, { a: -Infinity }, [NaN]]) {
      expect(() => canonicalJson(bad)).toThrow();
      expect(() => canonicalize(bad)).toThrow();
    }
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(() => canonicalJson(cycle)).toThrow();
    expect(() => canonicalJson({ n: 10n })).toThrow();
  });
});
