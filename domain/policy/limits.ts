import { RE2JS } from 're2js';

/** Size limits of a policy and of an org's policy set (documented in the OpenAPI description). */
export const MAX_PATTERN_LENGTH = 1000;
export const MAX_RULES_PER_POLICY = 50;
export const MAX_POLICIES_PER_ORG = 200;
/** Items in any one list of a policy (models, tools, agent ids, action types). */
export const MAX_LIST_ITEMS = 500;

const FLAG_BITS: Record<string, number> = {
  i: RE2JS.CASE_INSENSITIVE,
  m: RE2JS.MULTILINE,
  s: RE2JS.DOTALL,
};

/**
 * Null when the pattern compiles on the linear-time engine (RE2 semantics), else why not:
 * backreferences and lookaround, which can make a regex backtrack, are refused here.
 */
export function validatePattern(pattern: string, flags?: string): string | null {
  if (pattern.length > MAX_PATTERN_LENGTH) return `at most ${MAX_PATTERN_LENGTH} characters`;
  let bits = 0;
  for (const flag of flags ?? '') {
    const bit = FLAG_BITS[flag];
    if (bit === undefined) return `unknown flag "${flag}" (use i, m or s)`;
    bits |= bit;
  }
  try {
    RE2JS.compile(pattern, bits);
    return null;
  } catch (err) {
    return `not a valid RE2 regex: ${err instanceof Error ? err.message : String(err)}`;
  }
}
