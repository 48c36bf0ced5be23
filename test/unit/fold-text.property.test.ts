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

  it('cuts runs of marks to 30 before decomposing them, which would take time growing with the square of the run (QA)', () => {
    const run = 'a' + '\u0301\u0316'.repeat(20_000);
    const [plain, folded] = otherForms(run);
    expect([...(plain ?? '')].length).toBeLessThanOrEqual(31);
    expect(folded).toBe('a');
    // Also when the marks come from the decomposition of halfwidth voicing marks.
    expect([...plainText('ｶ' + '\uff9e\u0301'.repeat(100))].length).toBeLessThanOrEqual(61);
  });

  it('keeps accents in the plain form and drops them in the folded one', () => {
    expect(otherForms('cle\u0301 ｐ')).toEqual(['clé p', 'cle p']);
    expect(otherForms('clé')).toEqual(['cle']);
    expect(otherForms('plain ascii')).toEqual([]);
  });
});
