/** Characters that show as nothing: zero-width spaces and joiners, soft hyphens, variation selectors, ... */
const INVISIBLE = /\p{Default_Ignorable_Code_Point}/gu;

/**
 * The accents of Latin, Greek and Cyrillic letters (Combining Diacritical Marks). Only these: the
 * marks of other scripts (Japanese voicing marks, Devanagari vowel signs) are part of the letter.
 */
const ACCENTS = /[\u0300-\u036f]/g;

/** Text with something to fold: ASCII alone is its own form and holds no invisible character. */
const NON_ASCII = /[\u0080-\uffff]/;

/**
 * The form of a text that patterns judge besides the text itself: compatibility characters made
 * plain (fullwidth letters, ligatures, superscripts: NFKD), accents taken off, invisible characters
 * dropped, then composed again (NFC). So "ｐａｓｓ\u200bｗｏｒｄ" and "pa\u0301ssword" meet a
 * pattern written for "password". Look-alike letters of other scripts (a Cyrillic "а") are not
 * folded.
 */
export const foldText = (text: string): string =>
  NON_ASCII.test(text)
    ? text.normalize('NFKD').replace(ACCENTS, '').replace(INVISIBLE, '').normalize('NFC')
    : text;
