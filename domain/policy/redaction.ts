import type { RE2JS } from 're2js';
import { plainText } from './fold-text';
import type { PatternBudget } from './pattern-budget';

/** Most passes a redaction makes over a text whose replacements form its pattern again. */
const REDACTION_PASSES = 8;

/** How many replacements a redaction makes between two looks at the evaluation's time. */
const REPLACEMENTS_PER_TIME_CHECK = 8;

/**
 * One redact_pattern rule at work on an evaluation's texts. The first pass over a text as sent
 * replaces every match (`rewrite`). Every later look (its plain form, the folded step, the passes
 * over what other redactions made) leaves the rule's own replacements alone: a replacement its
 * pattern matches (`password=[REDACTED]` for `password=\S+`, `[sk-redacted]` for `sk-\w{6,}`) is
 * not a new match, so it is neither redacted again (growing at every pass) nor the reason a
 * whole text is sent folded (QA: accents were taken off a message for it), and what another
 * redaction re-forms next to it is still taken out (QA: both leaked a key).
 */
export interface Redaction {
  rewrite(text: string): string;
  /** Whether the text holds a match that is not one of the rule's own replacements. */
  findsNew(text: string): boolean;
  /** Every such match replaced. */
  rewriteNew(text: string): string;
  /**
   * The text, or its plain form (accents kept) redacted anew when a new match shows only there:
   * so text that needs no folding keeps every character it had.
   */
  keep(text: string): string;
}

export function redactionOf(regex: RE2JS, replacement: string, budget: PatternBudget): Redaction {
  const rewrite = replacingAll(regex, replacement, budget);
  const finds = (text: string) => regex.matcher(text).find();
  // An empty replacement leaves nothing to keep apart.
  const own = replacement !== '' && finds(replacement);
  const pieces = (text: string) => (own ? text.split(replacement) : [text]);
  const findsNew = (text: string) => pieces(text).some(finds);
  const rewriteNew = (text: string) => (own ? pieces(text).map(rewrite).join(replacement) : rewrite(text));
  const keep = (text: string) => {
    const plain = plainText(text);
    return plain !== text && findsNew(plain) ? rewriteNew(plain) : text;
  };
  return { rewrite, findsNew, rewriteNew, keep };
}

/**
 * A redaction's rewrite: every match replaced, and again while the replacements leave a new match
 * (QA: an empty replacement turned "hunhunter2ter2" into "hunter2", which was sent); still one
 * after REDACTION_PASSES passes, it throws, which denies. A replacement that matches the pattern
 * itself is applied once, as it would match again at every pass.
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
    if (n % REPLACEMENTS_PER_TIME_CHECK === 0) budget.checkTime('the redaction was stopped');
    out += text.slice(at, m.start()) + replacement;
    at = m.end();
  }
  return at === 0 && out === '' ? text : out + text.slice(at);
}
