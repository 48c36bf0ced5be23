import { z } from 'zod';
import { DomainError } from '../../domain/errors';

export const timestamp = z.string().meta({ format: 'date-time', description: 'ISO 8601 UTC' });
export const isoInput = z.iso.datetime({ offset: true });
export const email = z.email().max(254);
export const newPassword = z.string().min(12, 'must be at least 12 characters').max(1024);
export const displayName = z.string().trim().min(1).max(200);

export const ErrorBody = z
  .object({
    error_code: z.string(),
    message: z.string(),
    request_id: z.string(),
    details: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
    required_scope: z.string().optional(),
    retry_after_seconds: z.number().optional(),
    limit_bytes: z.number().optional(),
  })
  .meta({ id: 'Error' });

/** `limit` 1..100 (default 20) and an opaque `cursor`, on every list. */
export const pageQuery = {
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().max(200).optional(),
};

export const listOf = <T extends z.ZodType>(item: T) =>
  z.object({ data: z.array(item), next_cursor: z.string().nullable() });

/** The page a list query asks for: its limit and the position its cursor encodes. */
export const pageRequest = (query: { limit: number; cursor?: string | undefined }) => ({
  limit: query.limit,
  after: decodeCursor(query.cursor, 'string'),
});

/** A list answer: the page's items as presented, and the cursor of the next page (or null). */
export const pageReply = <T>(
  page: { items: T[]; nextAfter: string | null },
  present: (item: T) => unknown,
) => ({
  status: 200,
  body: { data: page.items.map(present), next_cursor: encodeCursor(page.nextAfter) },
});

/** Cursors are opaque to clients: base64url JSON of the position to continue from. */
export const encodeCursor = (position: string | number | null): string | null =>
  position === null ? null : Buffer.from(JSON.stringify({ p: position })).toString('base64url');

export function decodeCursor<T extends 'string' | 'number'>(cursor: string | undefined, kind: T) {
  if (cursor === undefined) return null;
  try {
    const { p } = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { p: unknown };
    if (typeof p === kind) return p as T extends 'string' ? string : number;
  } catch {
    // fall through to the validation error
  }
  throw new DomainError('validation_error', 'cursor: not a cursor this API returned', {
    details: [{ path: 'cursor', message: 'cursor: not a cursor this API returned' }],
  });
}
