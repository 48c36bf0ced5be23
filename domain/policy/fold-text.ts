/**
 * Characters that show as nothing: zero-width spaces and joiners, soft hyphens, variation
 * selectors, ...; every format character (QA: interlinear annotation marks, Egyptian format
 * controls and Arabic number signs split words, not being default-ignorable); and the control
 * characters that are not white space (a DEL or a backspace inside a word, QA; a tab, a line or
 * page break, or NEL still parts words).
 */
const INVISIBLE = /\p{Default_Ignorable_Code_Point}|\p{Cf}|(?![\t\n\v\f\r\u0085])\p{Cc}/gu;

/**
 * Unicode tag characters, each an invisible copy of a printable ASCII character (U+E0020–E007E):
 * the plain form drops them as invisible, the folded form reads the ASCII they carry (QA: a secret
 * written in them passed every pattern).
 */
const TAGS = /[\u{e0020}-\u{e007e}]/gu;
const untagged = (text: string): string =>
  text.replace(TAGS, (tag) => String.fromCharCode((tag.codePointAt(0) as number) - 0xe0000));

/**
 * Marks, and the four characters whose decomposition begins with one, past 30 in a row (Unicode's
 * stream-safe bound, UAX #15): decomposing a long run of them reorders it in time that grows with
 * the square of its length (QA: 150,000 marks held the event loop 6.6 s). No text needs more.
 */
const LONG_MARK_RUN = /([\p{M}\u0e33\u0eb3\uff9e\uff9f]{30})[\p{M}\u0e33\u0eb3\uff9e\uff9f]+/gu;

/** The text's compatibility decomposition (NFKD), its runs of marks cut to 30 first. */
const decompose = (text: string): string => text.replace(LONG_MARK_RUN, '$1').normalize('NFKD');

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

/** The folded form of a decomposed text: tags read, invisible characters and marks dropped. */
const folded = (decomposed: string): string =>
  untagged(decomposed)
    .replace(INVISIBLE, '')
    .replace(ACCENTS, '')
    .replace(MARKS_ON_LATIN, '$1')
    .normalize('NFC');

/** Text with something to fold: printable ASCII, tabs and line ends alone are their own form. */
const FOLDABLE = /[^\t\n\r\x20-\x7e]/;

/**
 * The form of a text that patterns judge besides the text itself: compatibility characters made
 * plain (fullwidth letters, ligatures, superscripts: NFKD), accents taken off, invisible characters
 * dropped, then composed again (NFC). So "ｐａｓｓ\u200bｗｏｒｄ" and "pa\u0301ssword" meet a
 * pattern written for "password". Look-alike letters of other scripts (a Cyrillic "а") are not
 * folded.
 */
export const foldText = (text: string): string => (FOLDABLE.test(text) ? folded(decompose(text)) : text);

/**
 * The form a pattern written with accents meets: as `foldText`, but with the accents kept. So
 * "cle\u0301" (decomposed), "cl\u200bé" and "ｃｌé" meet a pattern for "clé", which their folded
 * "cle" no longer can (QA: a decomposed accent or a zero-width space slipped text past a pattern
 * for "contraseña" and one for "секретный", whose "й" folds to "и").
 */
export const plainText = (text: string): string =>
  FOLDABLE.test(text) ? decompose(text).replace(INVISIBLE, '').normalize('NFC') : text;

/**
 * The forms of a text that patterns judge besides the text itself, each once: its plain form
 * (accents kept) and its folded form, where they differ from it.
 */
export function otherForms(text: string): string[] {
  if (!FOLDABLE.test(text)) return [];
  const decomposed = decompose(text); // one decomposition for both
  const plain = decomposed.replace(INVISIBLE, '').normalize('NFC');
  const fold = folded(decomposed);
  const forms = plain !== text ? [plain] : [];
  if (fold !== text && fold !== plain) forms.push(fold);
  return forms;
}
