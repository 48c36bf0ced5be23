import { RE2JS } from 're2js';
import { BoundedMemo } from '../bounded-memo';
import type { Rule } from './policy';

/** Size limits of a policy and of an org's policy set (documented in the OpenAPI description). */
export const MAX_PATTERN_LENGTH = 1000;
export const MAX_RULES_PER_POLICY = 50;
export const MAX_POLICIES_PER_ORG = 200;
/** Items in any one list of a policy (models, tools, agent ids, action types). */
export const MAX_LIST_ITEMS = 500;

/**
 * Items in the lists of an org's enabled policies together. Each process keeps every list item of
 * an org's compiled set (a set of names, and the folded names of tools): at 200 policies of 50
 * rules of 500 items, about 300 MB an org, and fifteen free orgs ran a process out of heap (QA,
 * 2026-11-29). This much takes 1 to 4 MB, as the items are short or long.
 */
export const MAX_ORG_LIST_ITEMS = 10_000;

/** Every list of a policy's rules and applies_to. */
function listsOf(policy: { rules: readonly Rule[]; appliesTo: object }): unknown[][] {
  const arrays = (o: object): unknown[][] => Object.values(o).filter((v): v is unknown[] => Array.isArray(v));
  return [
    ...arrays(policy.appliesTo),
    ...policy.rules.flatMap((rule) => [
      ...arrays(rule),
      ...(rule.type === 'require_approval' ? arrays(rule.when) : []),
    ]),
  ];
}

/** Every list's items in a policy's rules and applies_to (what MAX_ORG_LIST_ITEMS counts). */
export const listItemsOf = (policy: { rules: readonly Rule[]; appliesTo: object }): number =>
  listsOf(policy).reduce((n, list) => n + list.length, 0);

/**
 * What a policy's list items weigh in a compiled set (in COMPILED_SETS_BUDGET's units of 130
 * bytes): one each and one more per 50 characters, for the name, its folded form and the sets
 * that hold them (QA measured 268 bytes an item of 200 characters, 367 of 100 fullwidth ones).
 */
export const listWeightOf = (policy: { rules: readonly Rule[]; appliesTo: object }): number =>
  listsOf(policy).reduce(
    (n, list) => n + list.reduce<number>((w, item) => w + 1 + Math.floor(String(item).length / 50), 0),
    0,
  );

/**
 * Counted repetitions (`{n}`, `{n,m}`) expand the compiled program: 166 copies of `x{999}` take
 * about half a second to compile. Their counts may add up to this much across a pattern.
 */
export const MAX_REPEAT_TOTAL = 1000;

/**
 * Instructions a compiled pattern may have. What a scan costs grows with them (pattern-budget.ts):
 * `(?:\w*a){999}[^\w]` compiles to 3,000 and took 5 s over 100 KB; `x{999}` compiles to 1,001.
 */
export const MAX_PATTERN_PROGRAM = 1500;

/**
 * Instructions the patterns of an org's enabled policies may have together. Each process keeps
 * every org's compiled set, and compiles a new one on the event loop at each policy_version: at
 * 200 policies of 50 of the largest patterns that was about 2 GB and 14 s per change (QA,
 * 2026-11-28). This much (about 65 of the largest patterns, or thousands of plain ones) compiles
 * in about a tenth of a second into about 13 MB.
 */
export const MAX_ORG_PATTERN_PROGRAM = 100_000;

/**
 * The weight (compile-policies.ts: instructions and rules) of the compiled sets a process keeps:
 * about 260 MB at most, twenty orgs at their pattern limit or thousands of ordinary ones. A set
 * left out is compiled again when next used (a tenth of a second at the limit).
 */
export const COMPILED_SETS_BUDGET = 2_000_000;
/** What one unit of that weight takes of the heap (`npm run bench:policy-memory`: 13 MB a set of 99,128). */
const BYTES_PER_WEIGHT = 130;
/** The share of the process's heap limit the compiled sets may take at most. */
const HEAP_SHARE = 0.25;

/**
 * COMPILED_SETS_BUDGET, or less where the heap is small: a process started with
 * `--max-old-space-size=256` (as the README suggests to bound memory) would otherwise run out of
 * heap holding the sets of twenty orgs at their limit.
 */
export const compiledSetsBudget = (heapLimitBytes: number): number =>
  Math.min(COMPILED_SETS_BUDGET, Math.floor((heapLimitBytes * HEAP_SHARE) / BYTES_PER_WEIGHT));

/**
 * `{n}` and `{n,m}`, read left to right past escapes: `\x{2013}` is a character, and `\\{3}` a
 * repetition of a backslash.
 */
const REPEATS = /\\x\{[0-9A-Fa-f]+\}|\\.|\{(\d+)(?:,(\d*))?\}/g;

const countedRepeats = (pattern: string): number =>
  [...pattern.matchAll(REPEATS)].reduce(
    (sum, m) => (m[1] === undefined ? sum : sum + Math.max(Number(m[1]), Number(m[2] || 0))),
    0,
  );

/** The JavaScript-style flags a pattern may carry; any other (g, u, y...) is refused. */
const FLAG_BITS: Record<string, number> = {
  i: RE2JS.CASE_INSENSITIVE,
  m: RE2JS.MULTILINE,
  s: RE2JS.DOTALL,
};

/**
 * Compiles a pattern on the linear-time engine (RE2 semantics: no backreferences, no lookaround;
 * lookbehinds stay off), within the size limit. The one path shared by the store's validation and
 * the engine's compilation, so that what one accepts the other runs. Throws an Error saying why.
 */
export function compilePattern(pattern: string, flags = ''): RE2JS {
  if (pattern.length > MAX_PATTERN_LENGTH) throw new Error(`at most ${MAX_PATTERN_LENGTH} characters`);
  if (countedRepeats(pattern) > MAX_REPEAT_TOTAL)
    throw new Error(`counted repetitions ({n}, {n,m}) may add up to at most ${MAX_REPEAT_TOTAL}`);
  let bits = 0;
  for (const flag of flags) {
    const bit = FLAG_BITS[flag];
    if (bit === undefined) throw new Error(`unknown flag "${flag}" (use i, m or s)`);
    bits |= bit;
  }
  const regex = compiled(pattern, bits);
  const size = regex.matcher('').programSize();
  if (size > MAX_PATTERN_PROGRAM)
    throw new Error(
      `compiles to ${size} instructions, more than ${MAX_PATTERN_PROGRAM}: fewer or smaller repetitions`,
    );
  sizes.set(sizeKey(pattern, flags), size);
  return regex;
}

function compiled(pattern: string, bits: number): RE2JS {
  try {
    return RE2JS.compile(pattern, bits);
  } catch (err) {
    throw new Error(`not a valid RE2 regex: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** Null when `check` finds nothing wrong, else why not: its answer, or the message it threw. */
function problemOf(check: () => string | null): string | null {
  try {
    return check();
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/**
 * The answers of the checks below, by check, flags and pattern. A policy body's patterns are
 * checked in turns before its schema runs (checkPatternsInTurns), and the schema, which runs in one
 * piece, finds them answered: a pattern of the largest takes about 2 ms to compile, fifty of them
 * 100 ms of the event loop. A few hundred KB at most.
 */
const checks = new BoundedMemo<string | null>(1_000);

/** How many answers are kept (for tests). */
export const keptPatternChecks = (): number => checks.size;

/** A check's answer, kept only for a pattern short enough to be one (a body may carry 1 MiB strings). */
const checked = (key: string, pattern: string, check: () => string | null): string | null =>
  pattern.length > MAX_PATTERN_LENGTH ? check() : checks.answer(`${key}/${pattern}`, check);

/** Null when the pattern compiles (see compilePattern), else why not: for the store's 400s. */
export const validatePattern = (pattern: string, flags = ''): string | null =>
  checked(`match/${flags}`, pattern, () => problemOf(() => (compilePattern(pattern, flags), null)));

/** Texts on which a pattern that can match empty text shows it: empty, a word, words apart. */
const EMPTY_PROBES = ['', 'a', 'a b', '0,'];

/** Whether the pattern matches empty text somewhere (`a*`, `\\b`, `^`): its replacement would be inserted there. */
function matchesEmptyText(regex: RE2JS): boolean {
  return EMPTY_PROBES.some((probe) => {
    const m = regex.matcher(probe);
    while (m.find()) if (m.start() === m.end()) return true;
    return false;
  });
}

/**
 * Null when a redaction's pattern is usable, else why not: it must compile, and must not match
 * empty text, which would insert the replacement between every character (and mark every
 * message modified).
 */
export const validateRedaction = (pattern: string): string | null =>
  checked('redaction/', pattern, () =>
    problemOf(() =>
      matchesEmptyText(compilePattern(pattern))
        ? 'matches empty text, so the replacement would be inserted everywhere: make it match at least one character'
        : null,
    ),
  );

/**
 * Answers the checks of the patterns in a policy body's rules as received (before its schema:
 * anything malformed is left to it), awaiting `between` after each pattern, so that the schema's
 * checks find them answered. A deny_pattern's is checked without and with its flags (the schema
 * checks the pattern; the org's count compiles it with them). Returns the milliseconds the checks
 * took, the turns between them left out.
 */
export async function checkPatternsInTurns(rules: unknown, between: () => Promise<void>): Promise<number> {
  if (!Array.isArray(rules)) return 0;
  let ms = 0;
  for (const rule of rules.slice(0, MAX_RULES_PER_POLICY) as unknown[]) {
    const started = performance.now();
    if (!checkRulePattern(rule)) continue;
    ms += performance.now() - started;
    await between();
  }
  return ms;
}

/** Answers the checks of one rule's pattern; false when it has none to check. */
function checkRulePattern(rule: unknown): boolean {
  if (typeof rule !== 'object' || rule === null) return false;
  const { type, pattern, flags } = rule as Record<string, unknown>;
  if (typeof pattern !== 'string' || pattern.length > MAX_PATTERN_LENGTH) return false;
  if (type === 'redact_pattern') validateRedaction(pattern);
  else if (type === 'deny_pattern') {
    validatePattern(pattern);
    if (typeof flags === 'string' && flags !== '') validatePattern(pattern, flags);
  } else return false;
  return true;
}

/**
 * The program sizes of the patterns compiled last, by flags and pattern: a policy write validates
 * its patterns and then counts them (patternProgramOf), and need not compile them twice.
 */
const sizes = new BoundedMemo<number>(1_000);
const sizeKey = (pattern: string, flags: string) => `${flags}/${pattern}`;

/** The instructions of a policy's patterns (a pattern that does not compile counts none: the store refuses it). */
export function patternProgramOf(rules: readonly Rule[]): number {
  let total = 0;
  for (const rule of rules) {
    if (rule.type !== 'deny_pattern' && rule.type !== 'redact_pattern') continue;
    const flags = (rule.type === 'deny_pattern' ? rule.flags : undefined) ?? '';
    try {
      total +=
        sizes.get(sizeKey(rule.pattern, flags)) ??
        compilePattern(rule.pattern, flags).matcher('').programSize();
    } catch {
      // Refused by the rule's own validation.
    }
  }
  return total;
}
