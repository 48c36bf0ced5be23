import { InvalidArgumentError } from 'commander';

/** Flag value parsers: a bad value is a usage error (exit 2) before any request is sent. */

export function number(value: string): number {
  const parsed = Number(value);
  if (value.trim() === '' || !Number.isFinite(parsed)) throw new InvalidArgumentError('not a number.');
  return parsed;
}

/** A count or a duration that only means something above zero. */
export function positiveNumber(value: string): number {
  const parsed = number(value);
  if (parsed <= 0) throw new InvalidArgumentError('must be more than 0.');
  return parsed;
}

/** A polling interval in seconds: at least one, so a loop cannot spend the key's rate limit. */
export function pollSeconds(value: string): number {
  const parsed = number(value);
  if (parsed < 1) throw new InvalidArgumentError('must be at least 1 (second).');
  return parsed;
}

export function integer(value: string): number {
  const parsed = number(value);
  if (!Number.isInteger(parsed)) throw new InvalidArgumentError('not a whole number.');
  return parsed;
}

/** How many items a page holds: 1 to 100, as the API takes (QA: 0 went to it and came back a 400). */
export function pageSize(value: string): number {
  const parsed = integer(value);
  if (parsed < 1 || parsed > 100) throw new InvalidArgumentError('must be from 1 to 100.');
  return parsed;
}

function json(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    throw new InvalidArgumentError('not valid JSON.');
  }
}

/** A JSON object, for the API's free-form `metadata` and the like. */
export function jsonObject(value: string): Record<string, unknown> {
  const parsed = json(value);
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new InvalidArgumentError('not a JSON object.');
  return parsed as Record<string, unknown>;
}

export function jsonArray(value: string): unknown[] {
  const parsed = json(value);
  if (!Array.isArray(parsed)) throw new InvalidArgumentError('not a JSON array.');
  return parsed;
}

/**
 * A list flag's values, given as repeated words, a comma-separated string, or both
 * (`--scopes read` `--scopes llm:invoke,audit:read`), accumulated over repeats of the flag.
 */
export function words(value: string, previous: string[] = []): string[] {
  return [
    ...previous,
    ...value
      .split(',')
      .map((w) => w.trim())
      .filter(Boolean),
  ];
}
