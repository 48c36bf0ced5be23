import type { RE2JS } from 're2js';
import { redactionLengthOf, textLengthOf } from './action-tools';
import type { CompiledPolicySet } from './compile-policies';
import type { Action } from './policy';

/**
 * re2js runs in time linear in the text, but times how many of the pattern's compiled
 * instructions can be live at once, which a pattern such as `(?:\w*a){999}[^\w]` makes thousands:
 * one such rule held a worker's event loop for a minute on a 900 KB prompt. So one evaluation of
 * an action may scan at most this much, counted as characters × (program size + PER_CHARACTER).
 * The costliest patterns take about 17 ns per unit on the 2-core VM (2026-11-27), so this is at
 * most about 1.7 s of a core. Small patterns meet prompts written against them too (8–26 ns a unit
 * measured on 2026-11-29), so the count stays the worst case; ordinary text takes a fraction of a
 * nanosecond a unit, and ten plain patterns over a 200 KB prompt count about two thirds of it.
 */
export const PATTERN_WORK_BUDGET = 100_000_000;
/**
 * What one rule may scan of it. Measured on the 2-core VM in a busy hour (2026-11-28) the costliest
 * patterns took 35-48 ns a unit, not 17: a rule scanning the whole budget held the event loop about
 * 5 s. A third of the budget (about 1.5 s at that rate) still lets a plain pattern scan the largest
 * body a request may carry (1 MiB: about 3 × 10^7 units).
 */
export const RULE_WORK_BUDGET = 33_000_000;
/**
 * Time an evaluation may take before its next pattern rule: past it, that rule is not run and
 * denies its policy, as a rule past the budget does. Only pathological pairs of patterns and
 * prompts come near it (an org's ordinary evaluation takes tens of microseconds), so a verdict
 * depends on the machine's speed only where the policy could hold the event loop for seconds.
 */
export const EVALUATION_MAX_MS = 500;
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
  private readonly startedAt: number;

  /** `now`: the clock the evaluation's time is read on, from when the budget is made. */
  constructor(private readonly now: () => number = () => performance.now()) {
    this.startedAt = now();
  }

  /**
   * Spends what scanning the action's texts with `regex` can cost at worst (for a redaction, the
   * match and the rewrite), or throws (which denies the rule's policy, as any evaluation error
   * does) without scanning anything.
   */
  spend(regex: RE2JS, action: Action, scan: 'match' | 'redaction' = 'match'): void {
    const characters = scan === 'match' ? textLengthOf(action) : redactionLengthOf(action);
    const size = programSize(regex);
    const work = characters * (size + PER_CHARACTER);
    if (work > this.left || work > RULE_WORK_BUDGET)
      throw new Error(
        `a pattern of ${size} instructions over ${characters} characters is past what one evaluation ` +
          'may scan; shorten the prompt, or the pattern and its repetitions',
      );
    this.checkTime('this pattern was not run');
    this.left -= work;
  }

  /**
   * Throws once the evaluation took more than EVALUATION_MAX_MS: before each pattern rule, and
   * between a redaction's replacements, whose count the budget cannot know before they run (QA:
   * each match's search may scan to the end of the text, so a prompt of many matches made one
   * cheap-looking rule hold the event loop for seconds).
   */
  checkTime(what: string): void {
    const took = this.now() - this.startedAt;
    if (took > EVALUATION_MAX_MS)
      throw new Error(
        `the evaluation already took ${Math.round(took)} ms, past ${EVALUATION_MAX_MS} ms; ${what}: ` +
          "make the policies' patterns simpler, or the prompt shorter",
      );
  }
}

/** Each compiled set's pattern rules, summed as a scan costs them a character: counted once per set. */
const setCosts = new WeakMap<CompiledPolicySet, number>();

function costPerCharacter(compiled: CompiledPolicySet): number {
  let cost = setCosts.get(compiled);
  if (cost === undefined) {
    cost = 0;
    for (const { rules } of compiled.policies)
      for (const { regex } of rules) if (regex) cost += programSize(regex) + PER_CHARACTER;
    setCosts.set(compiled, cost);
  }
  return cost;
}

/**
 * The most the set's patterns could scan of the action, known before any is run (as each rule's
 * spend is): what marks an evaluation that may be heavy (evaluation-time.ts). Without pattern
 * rules the action's texts are not even measured.
 */
export function worstPatternWork(compiled: CompiledPolicySet, action: Action): number {
  const cost = costPerCharacter(compiled);
  return cost === 0 ? 0 : cost * textLengthOf(action);
}
