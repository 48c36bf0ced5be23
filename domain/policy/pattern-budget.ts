import type { RE2JS } from 're2js';
import { redactionLengthOf, textLengthOf } from './action-tools';
import type { Action } from './policy';

/**
 * re2js runs in time linear in the text, but times how many of the pattern's compiled
 * instructions can be live at once, which a pattern such as `(?:\w*a){999}[^\w]` makes thousands:
 * one such rule held a worker's event loop for a minute on a 900 KB prompt. So one evaluation of
 * an action may scan at most this much, counted as characters × (program size + PER_CHARACTER).
 * The costliest patterns take about 17 ns per unit on the 2-core VM (2026-11-27), so this is at
 * most about 1.7 s of a core; ten plain patterns (a program size under 30) over a 200 KB prompt
 * take a tenth of it.
 */
export const PATTERN_WORK_BUDGET = 100_000_000;
/** What each character costs whatever the pattern (re2js's per-character work, in instructions). */
export const PER_CHARACTER = 20;

const sizes = new WeakMap<RE2JS, number>();

function programSize(regex: RE2JS): number {
  let size = sizes.get(regex);
  if (size === undefined) {
    size = regex.matcher('').programSize();
    sizes.set(regex, size);
  }
  return size;
}

/** The pattern matching one evaluation has left; each pattern rule spends from it before it scans. */
export class PatternBudget {
  private left = PATTERN_WORK_BUDGET;

  /**
   * Spends what scanning the action's texts with `regex` can cost at worst (for a redaction, the
   * match and the rewrite), or throws (which denies the rule's policy, as any evaluation error
   * does) without scanning anything.
   */
  spend(regex: RE2JS, action: Action, scan: 'match' | 'redaction' = 'match'): void {
    const characters = scan === 'match' ? textLengthOf(action) : redactionLengthOf(action);
    const size = programSize(regex);
    const work = characters * (size + PER_CHARACTER);
    if (work > this.left)
      throw new Error(
        `a pattern of ${size} instructions over ${characters} characters is past what one evaluation ` +
          'may scan; shorten the prompt, or the pattern and its repetitions',
      );
    this.left -= work;
  }
}
