import type { RE2JS } from 're2js';
import { plainText } from './fold-text';
import type { PatternBudget } from './pattern-budget';

/** Most passes a redaction makes over a text whose replacements form its pattern again. */
const REDACTION_PASSES = 8;

/** How many matches a redaction goes through between two looks at the evaluation's time. */
const MATCHES_PER_TIME_CHECK = 8;

/**
 * One redact_pattern rule at work on an evaluation's texts. The first pass over a text as sent
 * replaces every match (`rewrite`). Every later look (its plain form, the folded step, the passes
 * over what other redactions made) takes a match that lies wholly inside the redactions'
 * replacements (`kept`: copies of them, side by side) for no new match: such a match is only
 * the operator's own text. So a replacement its pattern matches (`password=[REDACTED]` for
 * `password=\S+`, `[sk-redacted]` for `sk-\w{6,}`) neither grows at every pass nor hides a key
 * another redaction re-formed beside it, two rules that match each other's replacements do not
 * take turns for ever, and a replacement is no reason to send a whole text folded (QA). A match
 * that reaches past a replacement is new (QA: `pass\u200bword=[REDACTED]hunter2` was sent when
 * the replacement's copy was skipped whole).
 */
export interface Redaction {
  readonly replacement: string;
  rewrite(text: string): string;
  /** Whether the text holds a match that is not wholly inside copies of `kept`. */
  findsNew(text: string, kept: readonly string[]): boolean;
  /** Every such match replaced. */
  rewriteNew(text: string, kept: readonly string[]): string;
  /**
   * The text, or its plain form (accents kept) redacted anew when a new match shows only there:
   * so text that needs no folding keeps every character it had.
   */
  keep(text: string, kept: readonly string[]): string;
}

export function redactionOf(regex: RE2JS, replacement: string, budget: PatternBudget): Redaction {
  const rewrite = replacingAll(regex, replacement, budget);
  const findsNew = (text: string, kept: readonly string[]) =>
    eachNewMatch(regex, text, spansOf(text, kept), budget, () => false);
  const rewriteNew = (text: string, kept: readonly string[]) => {
    let out = '';
    let at = 0;
    eachNewMatch(regex, text, spansOf(text, kept), budget, (start, end) => {
      out += text.slice(at, start) + replacement;
      at = end;
      return true;
    });
    return at === 0 && out === '' ? text : out + text.slice(at);
  };
  const keep = (text: string, kept: readonly string[]) => {
    const plain = plainText(text);
    return plain !== text && findsNew(plain, kept) ? rewriteNew(plain, kept) : text;
  };
  return { replacement, rewrite, findsNew, rewriteNew, keep };
}

/**
 * Calls `each` with every match of `regex` in `text` that does not lie wholly inside one of
 * `spans` (sorted, apart), until it returns false; whether there was any.
 */
function eachNewMatch(
  regex: RE2JS,
  text: string,
  spans: readonly [number, number][],
  budget: PatternBudget,
  each: (start: number, end: number) => boolean,
): boolean {
  const m = regex.matcher(text);
  let found = false;
  let span = 0;
  for (let n = 1; m.find(); n++) {
    if (n % MATCHES_PER_TIME_CHECK === 0) budget.checkTime('the redaction was stopped');
    const [start, end] = [m.start(), m.end()];
    while (span < spans.length && (spans[span] as [number, number])[1] < end) span++;
    const around = spans[span];
    if (around && around[0] <= start && end <= around[1]) continue;
    found = true;
    if (!each(start, end)) break;
  }
  return found;
}

/** Where copies of `strings` stand in `text`, those that touch or overlap joined into one. */
function spansOf(text: string, strings: readonly string[]): [number, number][] {
  const spans: [number, number][] = [];
  for (const s of strings) {
    if (s === '') continue;
    for (let at = text.indexOf(s); at !== -1; at = text.indexOf(s, at + s.length))
      spans.push([at, at + s.length]);
  }
  spans.sort((a, b) => a[0] - b[0]);
  const joined: [number, number][] = [];
  for (const [start, end] of spans) {
    const last = joined.at(-1);
    if (last && start <= last[1]) last[1] = Math.max(last[1], end);
    else joined.push([start, end]);
  }
  return joined;
}

/**
 * A redaction's first pass: every match replaced, and again while the replacements leave a new
 * match (QA: an empty replacement turned "hunhunter2ter2" into "hunter2", which was sent); still
 * one after REDACTION_PASSES passes, it throws, which denies. A replacement that matches the
 * pattern itself is applied once, as it would match again at every pass.
 */
function replacingAll(regex: RE2JS, replacement: string, budget: PatternBudget): (text: string) => string {
  const once = (text: string) => replaceEach(regex, text, replacement, budget);
  if (regex.matcher(replacement).find()) return once;
  return (text) => {
    let out = once(text);
    for (let pass = 1; out !== text && regex.matcher(out).find(); pass++) {
      if (pass >= REDACTION_PASSES)
        throw new Error(`the redaction still matched after ${REDACTION_PASSES} passes over a text`);
      out = once(out);
    }
    return out;
  };
}

/**
 * Every match of `regex` in `text` replaced by `replacement`, as it is (a "$1" in it is no group
 * reference), as re2js's replaceAll does, but with the evaluation's time checked as it goes: each
 * search for the next match may scan to the end of the text, which the pattern budget cannot
 * count before it runs (QA: `password|\w+\.exe` over 40,000 characters held the loop 6–13 s).
 */
function replaceEach(regex: RE2JS, text: string, replacement: string, budget: PatternBudget): string {
  const m = regex.matcher(text);
  let out = '';
  let at = 0;
  for (let n = 1; m.find(); n++) {
    if (n % MATCHES_PER_TIME_CHECK === 0) budget.checkTime('the redaction was stopped');
    out += text.slice(at, m.start()) + replacement;
    at = m.end();
  }
  return at === 0 && out === '' ? text : out + text.slice(at);
}
