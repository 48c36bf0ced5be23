import type { z } from 'zod';
import { validationError } from '../../domain/errors';
import { findUnstorable, MAX_DETAILS } from './unstorable-input';

/** Parses input with a zod schema; each problem, the first MAX_DETAILS of them, a `details` entry of a 400. */
export function parseInput<S extends z.ZodType>(
  schema: S,
  input: unknown,
  where: 'body' | 'query' | 'path',
): z.infer<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw validationError(
    result.error.issues.slice(0, MAX_DETAILS).map((issue) => ({
      path: issue.path.length > 0 ? issue.path.join('.') : where,
      message:
        issue.path.length > 0 ? `${issue.path.join('.')}: ${issue.message}` : `${where}: ${issue.message}`,
    })),
  );
}

/**
 * The rule every route applies before its schemas: what a route reads (path parameters, and its
 * query and body when it has schemas for them) holds nothing PostgreSQL cannot store or compare,
 * so such input is a 400 naming the field instead of a database error (a 500).
 */
export function refuseUnstorable(input: { path: unknown; query?: unknown; body?: unknown }): void {
  const details = [
    ...findUnstorable(input.path, 'path'),
    ...(input.query === undefined ? [] : findUnstorable(input.query, 'query')),
    ...(input.body === undefined ? [] : findUnstorable(input.body, 'body')),
  ];
  if (details.length > 0) throw validationError(details);
}
