import type { z } from 'zod';
import { validationError } from '../../domain/errors';

/** Parses input with a zod schema; every problem becomes a `details` entry of a 400. */
export function parseInput<S extends z.ZodType>(
  schema: S,
  input: unknown,
  where: 'body' | 'query' | 'path',
): z.infer<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw validationError(
    result.error.issues.map((issue) => ({
      path: issue.path.length > 0 ? issue.path.join('.') : where,
      message:
        issue.path.length > 0 ? `${issue.path.join('.')}: ${issue.message}` : `${where}: ${issue.message}`,
    })),
  );
}
