import fc from 'fast-check';
import { refusedKey } from '../../domain/duplicate-keys';

/** The key refusedKey finds named twice, if that is why it refuses the body. */
const duplicateKey = (text: string): string | null => {
  const refused = refusedKey(text);
  return refused?.reason === 'repeated' ? refused.key : null;
};

describe('duplicateKey', () => {
  it.each([
    ['{"a":1,"a":2}', 'a'],
    ['{"a" : 1, "a"\n:2}', 'a'],
    ['{"x":[{"k":1},{"k":2,"k":3}]}', 'k'],
    ['{"a":1,"\\u0061":2}', 'a'], // compared as decoded
    ['{"a\\\\":1,"a\\\\":2}', 'a\\'],
    ['{"scopes":["read"],"name":"k","scopes":["org:admin"]}', 'scopes'],
  ])('finds the key %s names twice', (text, key) => {
    expect(duplicateKey(text)).toBe(key);
  });

  it.each([
    '{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}', // the same key in different objects
    '["a","a",{"a":"a"}]', // strings that are not keys
    '{"a":"b","c":"a"}', // a value that reads like a key
    '{"a":"x\\":{\\"a\\":1}","b":"\\\\"}', // quotes, braces and colons inside strings
    '{"a":"\\\\","b":"\\\\\\"a\\":1"}', // escaped backslashes before quotes
    '"just a string"',
    '{}',
  ])('finds none in %s', (text) => {
    expect(duplicateKey(text)).toBeNull();
  });

  it('finds none in any JSON that JSON.stringify writes', () => {
    fc.assert(fc.property(fc.jsonValue(), (value) => duplicateKey(JSON.stringify(value)) === null));
  });

  it('finds a key written twice into any object', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string({ unit: 'binary' }), fc.jsonValue()),
        fc.string({ unit: 'binary' }),
        (object, key) => {
          const body = JSON.stringify(object).slice(1, -1);
          const twice = `{${JSON.stringify(key)}:1${body ? `,${body}` : ''},${JSON.stringify(key)}:2}`;
          return duplicateKey(twice) === key;
        },
      ),
    );
  });
});

describe('refusedKey', () => {
  it.each([
    '{"__proto__":{"a":1}}',
    '{"tools":[{"function":{"parameters":{"__proto__":{"description":"x"}}}}]}',
    '{"\\u005f\\u005fproto\\u005f\\u005f":1}', // however escaped
  ])('refuses the key __proto__ in %s', (text) => {
    expect(refusedKey(text)).toEqual({ key: '__proto__', reason: 'reserved' });
  });

  it('names a repeated key as duplicateKey does, and takes "__proto__" as a value', () => {
    expect(refusedKey('{"a":1,"a":2}')).toEqual({ key: 'a', reason: 'repeated' });
    expect(refusedKey('{"a":"__proto__","b":["__proto__"]}')).toBeNull();
    expect(duplicateKey('{"__proto__":1}')).toBeNull();
  });
});
