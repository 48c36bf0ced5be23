import { LONE_SURROGATE } from '../../domain/storable-text';
import type { ValidationDetail } from '../../domain/errors';

/** How deeply a request body may nest objects and arrays; the body itself is level 1. */
export const MAX_BODY_DEPTH = 32;

/** What every route refuses, as the API documents it (OpenAPI info, schema descriptions). */
export const UNSTORABLE_INPUT_RULE =
  'Strings (in bodies, object keys, query values and path parameters) must not contain NUL (\\u0000) ' +
  'or a lone UTF-16 surrogate, numbers must be finite (1e400 is not), and a body nests at most ' +
  `${MAX_BODY_DEPTH} levels of objects and arrays (the body is level 1): otherwise 400 validation_error ` +
  'naming the field.';

/** A hostile body can hold thousands of problems; a few name the field well enough. */
export const MAX_DETAILS = 10;
const SHOWN_SEGMENTS = 4;
const SHOWN_SEGMENT_CHARS = 100;

/** PostgreSQL's text and jsonb can hold neither a NUL nor half of a surrogate pair. */
function stringProblem(text: string): string | null {
  if (text.includes('\u0000')) return 'must not contain NUL (\\u0000)';
  if (LONE_SURROGATE.test(text)) return 'must be well-formed Unicode (no lone surrogate)';
  return null;
}

/** What is wrong with a string or number, or null. */
function scalarProblem(value: unknown): string | null {
  if (typeof value === 'string') return stringProblem(value);
  if (typeof value === 'number' && !Number.isFinite(value)) return 'must be a finite number';
  return null;
}

/** A path short enough to echo: a deep one keeps its first segments, a long key its start. */
function shownPath(segments: (string | number)[], where: string): string {
  if (segments.length === 0) return where;
  const shown = segments
    .slice(0, SHOWN_SEGMENTS)
    .map(String)
    .map((s) => (s.length > SHOWN_SEGMENT_CHARS ? `${s.slice(0, SHOWN_SEGMENT_CHARS)}…` : s));
  return (segments.length > SHOWN_SEGMENTS ? [...shown, '…'] : shown).join('.');
}

/**
 * The parts of parsed input no route can store or compare as sent: strings (values and object
 * keys) with a NUL or a lone surrogate, numbers JSON read as ±Infinity, and nesting past
 * MAX_BODY_DEPTH (deeper JSON overflows the stack of recursive code further on). `where` names
 * the input when the problem is at its root. Never descends past the limit, so it is stack-safe.
 */
export function findUnstorable(input: unknown, where: string): ValidationDetail[] {
  const found: ValidationDetail[] = [];
  // One path, pushed and popped as the walk goes: a 1 MiB body has ~500k values.
  const segments: (string | number)[] = [];
  const report = (problem: string) => {
    const path = shownPath(segments, where);
    found.push({ path, message: `${path}: ${problem}` });
  };
  const visit = (value: unknown, depth: number): void => {
    if (value === null || typeof value !== 'object') {
      const problem = scalarProblem(value);
      if (problem) report(problem);
      return;
    }
    if (depth > MAX_BODY_DEPTH)
      return report(`nests deeper than ${MAX_BODY_DEPTH} levels of objects and arrays`);
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length && found.length < MAX_DETAILS; i++) {
        segments.push(i);
        visit(value[i], depth + 1);
        segments.pop();
      }
      return;
    }
    const record = value as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      if (found.length >= MAX_DETAILS) return;
      const problem = stringProblem(key);
      if (problem) {
        report(`a key ${problem}`);
        continue;
      }
      segments.push(key);
      visit(record[key], depth + 1);
      segments.pop();
    }
  };
  visit(input, 1);
  return found;
}
