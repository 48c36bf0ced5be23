/** Characters that show as nothing: zero-width spaces and joiners, soft hyphens, variation selectors, ... */
const INVISIBLE = /\p{Default_Ignorable_Code_Point}/gu;

/** Text with something to fold: ASCII alone is its own NFKC form and holds no invisible character. */
const NON_ASCII = /[\u0080-\uffff]/;

/**
 * The form of a text that patterns judge besides the text itself: its NFKC compatibility form
 * (fullwidth letters, ligatures, superscripts and composed accents become the plain characters a
 * pattern names) with the invisible characters dropped, so "ｐａｓｓ\u200bｗｏｒｄ" meets a pattern
 * written for "password". Look-alike letters of other scripts (a Cyrillic "а") are not folded.
 */
export const foldText = (text: string): string =>
  NON_ASCII.test(text) ? text.normalize('NFKC').replace(INVISIBLE, '') : text;
