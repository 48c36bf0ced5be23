/**
 * Characters that show as nothing: zero-width spaces and joiners, soft hyphens, variation
 * selectors, ...; and the control characters that are not white space (a DEL or a backspace
 * inside a word, QA; a tab, a line or page break, or NEL still parts words).
 */
const INVISIBLE = /\p{Default_Ignorable_Code_Point}|(?![\t\n\v\f\r\u0085])\p{Cc}/gu;

/**
 * The marks any letter may carry: the Combining Diacritical Marks (the accents of Latin, Greek and
 * Cyrillic), their Extended and Supplement blocks, the marks for symbols and the half marks (QA:
 * "pa\u20d0ssword" hid from a pattern for "password"). Only these: the marks of a script of their
 * own (Japanese voicing marks, Devanagari vowel signs) are part of the letter.
 */
const ACCENTS = /[\u0300-\u036f]|[\u1ab0-\u1aff]|[\u1dc0-\u1dff]|[\u20d0-\u20ff]|[\ufe20-\ufe2f]/g;

/**
 * Any other combining marks on a Latin, Greek or Cyrillic letter or on ASCII: never part of such a
 * letter, so only there to hide it (QA: Vedic, musical, Arabic and Cyrillic marks after "a" hid
 * "password"). The base is kept; the same marks on letters of their own script stay. One match
 * takes a letter and its whole run of marks, so the work stays linear however long the run.
 */
const MARKS_ON_LATIN = /([\p{sc=Latin}\p{sc=Greek}\p{sc=Cyrillic}\x21-\x7e])\p{M}+/gu;

/** The folded form of a decomposed text, invisible characters already dropped. */
const withoutMarks = (decomposed: string): string =>
  decomposed.replace(ACCENTS, '').replace(MARKS_ON_LATIN, '$1').normalize('NFC');

/** Text with something to fold: printable ASCII, tabs and line ends alone are their own form. */
const FOLDABLE = /[^\t\n\r\x20-\x7e]/;

/**
 * The form of a text that patterns judge besides the text itself: compatibility characters made
 * plain (fullwidth letters, ligatures, superscripts: NFKD), accents taken off, invisible characters
 * dropped, then composed again (NFC). So "ｐａｓｓ\u200bｗｏｒｄ" and "pa\u0301ssword" meet a
 * pattern written for "password". Look-alike letters of other scripts (a Cyrillic "а") are not
 * folded.
 */
export const foldText = (text: string): string =>
  FOLDABLE.test(text) ? withoutMarks(text.normalize('NFKD').replace(INVISIBLE, '')) : text;

/**
 * The form a pattern written with accents meets: as `foldText`, but with the accents kept. So
 * "cle\u0301" (decomposed), "cl\u200bé" and "ｃｌé" meet a pattern for "clé", which their folded
 * "cle" no longer can (QA: a decomposed accent or a zero-width space slipped text past a pattern
 * for "contraseña" and one for "секретный", whose "й" folds to "и").
 */
export const plainText = (text: string): string =>
  FOLDABLE.test(text) ? text.normalize('NFKD').replace(INVISIBLE, '').normalize('NFC') : text;

/**
 * The forms of a text that patterns judge besides the text itself, each once: its plain form
 * (accents kept) and its folded form, where they differ from it.
 */
export function otherForms(text: string): string[] {
  if (!FOLDABLE.test(text)) return [];
  // One decomposition for both (removing accents and invisible characters commutes).
  const decomposed = text.normalize('NFKD').replace(INVISIBLE, '');
  const plain = decomposed.normalize('NFC');
  const folded = withoutMarks(decomposed);
  const forms = plain !== text ? [plain] : [];
  if (folded !== text && folded !== plain) forms.push(folded);
  return forms;
}
