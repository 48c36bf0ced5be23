import type { RE2JS } from 're2js';
import { plainText } from './fold-text';
import type { PatternBudget } from './pattern-budget';

/**
 * Most passes over a text a redaction's replacements form its pattern again in, and over what the
 * redactions made of a request (`settleRedacted`): past it, the request is denied.
 */
export const REDACTION_PASSES = 8;

/** How many matches a redaction goes through between two looks at the evaluation's time. */
const MATCHES_PER_TIME_CHECK = 8;

/**
 * One redact_pattern rule at work on an evaluation's texts, in its first pass (`rewrite`) and in
 * every later look (its plain form, the folded step, the passes over what other redactions made).
 * A match that is part of one of the redactions' replacements (`kept`: inside a copy of one,
 * short of all of it) or is the rule's own replacement is no new match: it is only the
 * operator's text. So a replacement its pattern matches (`password=[REDACTED]` for `password=\S+`,
 * `[sk-redacted]` for `sk-\w{6,}`) neither grows at every pass nor hides a key another redaction
 * re-formed beside it, rules that match part of each other's replacements settle and leave them
 * whole, and a replacement is no reason to send a whole text folded (QA). A match that reaches
 * past a copy is new (QA: `pass\u200bword=[REDACTED]hunter2` was sent when a copy was skipped
 * whole), and so is one that is a whole copy of another rule's replacement (a rename).
 */
export interface Redaction {
  readonly replacement: string;
  /** The first pass: every new match replaced, and again while replacing leaves a new one. */
  rewrite(text: string, kept: readonly string[]): string;
  /** Whether the text holds a match that is not part of copies of `kept` (see above). */
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
  const findsNew = (text: string, kept: readonly string[]) =>
    eachNewMatch(regex, replacement, text, kept, budget, () => false);
  const rewriteNew = (text: string, kept: readonly string[]) => {
    let out = '';
    let at = 0;
    eachNewMatch(regex, replacement, text, kept, budget, (start, end) => {
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
  const rewrite = repeated(regex, replacement, (text: string, kept: readonly string[]) => {
    const out = rewriteNew(text, kept);
    return { out, more: out !== text && findsNew(out, kept) };
  });
  return { replacement, rewrite, findsNew, rewriteNew, keep };
}

/**
 * Calls `each` with every match of `regex` in `text` that is not part of a copy of `kept` (see
 * `keptBy`), until it returns false; whether there was any. After a match it skips, the search
 * goes on from the next position, not from its end: a longer match may begin inside it (QA:
 * `sk-redactedsk-redactedabc123SECRET` hid its key behind a skipped `sk-redactedsk`). The
 * evaluation's time is checked as it goes: each search may scan to the end of the text, which the
 * pattern budget cannot count before it runs (QA: `password|\w+\.exe` over 40,000 characters
 * held the event loop 6–13 s).
 */
function eachNewMatch(
  regex: RE2JS,
  replacement: string,
  text: string,
  kept: readonly string[],
  budget: PatternBudget,
  each: (start: number, end: number) => boolean,
): boolean {
  const m = regex.matcher(text);
  const isKept = keptBy(text, [...kept, replacement]);
  let found = false;
  for (let n = 1, more = m.find(); more; n++) {
    if (n % MATCHES_PER_TIME_CHECK === 0) budget.checkTime('the redaction was stopped');
    const [start, end] = [m.start(), m.end()];
    if (isKept(start, end)) {
      if (start >= text.length) break;
      more = m.find(start + (isPairAt(text, start) ? 2 : 1));
      continue;
    }
    found = true;
    if (!each(start, end)) break;
    more = m.find();
  }
  return found;
}

const isPairAt = (text: string, at: number): boolean => {
  const code = text.charCodeAt(at);
  return code >= 0xd800 && code <= 0xdbff && at + 1 < text.length;
};

/**
 * Whether a match (asked in the order of their starts) is part of the operator's text: inside one
 * copy of `strings` and short of all of it (`[KEY]` for `\b[A-Z]{3,}\b`, `sk-redacted` inside
 * `[sk-redacted]`), or a whole copy of the rule's own replacement, the last of them, which it would
 * only write again. A whole copy of another rule's replacement is taken out as any match (a rename
 * such as `dog` → `cow` still meets the `dog` another rule wrote, however many side by side).
 */
function keptBy(text: string, strings: readonly string[]): (start: number, end: number) => boolean {
  const own = strings.at(-1) ?? '';
  const copies: [number, number][] = [];
  for (const s of new Set(strings)) {
    if (s === '') continue;
    for (let at = text.indexOf(s); at !== -1; at = text.indexOf(s, at + 1)) copies.push([at, at + s.length]);
  }
  copies.sort((a, b) => a[0] - b[0]);
  const longest = Math.max(0, ...strings.map((s) => s.length));
  let first = 0;
  return (start, end) => {
    if (own !== '' && end - start === own.length && text.startsWith(own, start)) return true;
    // A copy that holds the match starts no more than the longest string before it.
    while (first < copies.length && (copies[first] as [number, number])[0] < start - longest) first++;
    for (let i = first; i < copies.length && (copies[i] as [number, number])[0] <= start; i++) {
      const [from, to] = copies[i] as [number, number];
      if (end <= to && (from < start || end < to)) return true;
    }
    return false;
  };
}

/**
 * A redaction's first pass: every new match replaced, and again while the replacements leave a
 * new match (QA: an empty replacement turned "hunhunter2ter2" into "hunter2", which was sent);
 * still one after REDACTION_PASSES passes, it throws, which denies. A replacement that matches
 * the pattern itself is applied once: what it leaves is for the passes after (`settleRedacted`).
 */
function repeated(
  regex: RE2JS,
  replacement: string,
  once: (text: string, kept: readonly string[]) => { out: string; more: boolean },
): (text: string, kept: readonly string[]) => string {
  const matchesItself = regex.matcher(replacement).find();
  return (text, kept) => {
    let { out, more } = once(text, kept);
    for (let pass = 1; more && !matchesItself; pass++) {
      if (pass >= REDACTION_PASSES)
        throw new Error(`the redaction still matched after ${REDACTION_PASSES} passes over a text`);
      ({ out, more } = once(out, kept));
    }
    return out;
  };
}
