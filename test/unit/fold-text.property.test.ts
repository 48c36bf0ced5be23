import fc from 'fast-check';
import { foldText, otherForms, plainText } from '../../domain/policy/fold-text';

/** What otherForms must return: the plain form, then the folded one, each where it differs. */
const expected = (text: string): string[] => {
  const plain = plainText(text);
  const folded = foldText(text);
  return [...(plain !== text ? [plain] : []), ...(folded !== text && folded !== plain ? [folded] : [])];
};

describe('otherForms', () => {
  it('is the plain form and the folded form where they differ, from one decomposition', () => {
    const pieces = fc.constantFrom(
      'a',
      'é',
      'e\u0301',
      '\u200b',
      'ｐ',
      'й',
      'и\u0306',
      'a\u20d0',
      'a\u1cd0\u064b',
      'क\u0941',
      'ﬁ',
      '①',
      '日',
      ' ',
      '-',
    );
    fc.assert(
      fc.property(fc.array(fc.oneof(pieces, fc.string({ unit: 'binary' })), { maxLength: 12 }), (parts) => {
        const text = parts.join('');
        expect(otherForms(text)).toEqual(expected(text));
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps accents in the plain form and drops them in the folded one', () => {
    expect(otherForms('cle\u0301 ｐ')).toEqual(['clé p', 'cle p']);
    expect(otherForms('clé')).toEqual(['cle']);
    expect(otherForms('plain ascii')).toEqual([]);
  });
});
