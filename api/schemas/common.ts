import { z } from 'zod';
import { DomainError } from '../../domain/errors';
import { usdToMicros } from '../../domain/pricing/cost';
import { findUnstorable, MAX_BODY_DEPTH } from '../http/unstorable-input';

export const timestamp = z.string().meta({ format: 'date-time', description: 'ISO 8601 UTC' });
export const isoInput = z.iso.datetime({ offset: true });

/** A list's time window: an `until` not after `since` can match nothing, and is a mistake. */
export const sinceBeforeUntil = (
  q: { since?: string | undefined; until?: string | undefined },
  ctx: z.RefinementCtx,
) => {
  if (q.since && q.until && Date.parse(q.until) <= Date.parse(q.since))
    ctx.addIssue({ code: 'custom', path: ['until'], message: 'must be after since' });
};
export const email = z.email().max(254);
export const newPassword = z
  .string()
  .min(12, 'must be at least 12 characters')
  .max(1024)
  .refine((p) => p.trim().length > 0, 'must not be only spaces');
export const displayName = z.string().trim().min(1).max(200);

const MAX_METADATA_BYTES = 16 * 1024;

export const metadata = z
  .record(z.string().min(1).max(100), z.unknown())
  .refine((m) => Object.keys(m).length <= 50, 'at most 50 keys')
  .refine(
    (m) => Buffer.byteLength(JSON.stringify(m)) <= MAX_METADATA_BYTES,
    `at most ${MAX_METADATA_BYTES} bytes`,
  )
  .meta({
    description:
      `Free-form labels (at most 50 keys, 16 KiB as JSON, the body nested at most ${MAX_BODY_DEPTH} levels; ` +
      'no NUL or lone surrogate in keys or strings, no non-finite number). Never put secrets here.',
  });

/**
 * Money is kept in integer micro-dollars: a USD amount that is not 0 but rounds to 0 of them
 * (5e-324) would be stored as free, or break a database check, so it is refused.
 */
export const notRoundedToZero = (usd: number): boolean => usd === 0 || usdToMicros(usd) !== 0;
export const ROUNDS_TO_ZERO = 'rounds to 0 micro-dollars (the smallest amount is 0.000001)';

export const ErrorBody = z
  .object({
    error_code: z.string(),
    message: z.string(),
    request_id: z.string(),
    details: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
    required_scope: z.string().optional(),
    accepted_scopes: z.array(z.string()).optional(),
    retry_after_seconds: z.number().optional(),
    limit_bytes: z.number().optional(),
    model: z.string().optional().meta({ description: 'unpriced_model: the model without a price' }),
    session_id: z.string().optional().meta({ description: 'budget_exceeded, session_not_open' }),
    cap: z.enum(['cost', 'calls', 'tokens']).optional().meta({ description: 'budget_exceeded: which cap' }),
    limit: z.number().optional().meta({ description: 'budget_exceeded: the cap (USD for cost)' }),
    remaining: z
      .number()
      .optional()
      .meta({ description: 'budget_exceeded: what is left of it after settled usage and calls in flight' }),
    needed: z
      .number()
      .optional()
      .meta({ description: "budget_exceeded: the call's worst case against that cap (USD for cost)" }),
    status: z
      .string()
      .optional()
      .meta({ description: 'session_not_open, invalid_state: the current status' }),
  })
  .meta({ id: 'Error' });

/**
 * The errors of the OpenAI-compatible routes (api/http/openai-errors.ts): OpenAI's `error` object,
 * which the OpenAI SDKs read, beside the contract's own fields.
 */
export const OpenAIErrorBody = ErrorBody.extend({
  error: z.object({
    message: z.string(),
    type: z.string().meta({ description: "OpenAI's error type for the status (invalid_request_error, ...)" }),
    code: z.string().meta({ description: 'The error_code' }),
    param: z.string().nullable().meta({
      description:
        'The field at fault; approval_pending: the approval id; invocation_pending: the invocation id',
    }),
  }),
  invocation_id: z
    .string()
    .optional()
    .meta({ description: 'Set when an invocation was admitted and did not succeed' }),
  credential_ref: z
    .string()
    .optional()
    .meta({ description: 'credential_not_found: the credential the call named, since deleted' }),
}).meta({ id: 'OpenAIError' });

/** `limit` 1..100 (default 20) and an opaque `cursor`, on every list. */
export const pageQuery = {
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().max(200).optional().meta({
    description:
      "The previous page's next_cursor. A cursor pages only the list that returned it: one of another list is a 400 validation_error",
  }),
};

export const listOf = <T extends z.ZodType>(item: T) =>
  z.object({ data: z.array(item), next_cursor: z.string().nullable() });

/**
 * The lists that page, each by the name its cursors carry, so that a cursor handed to another list
 * (whose positions mean something else) is refused rather than answered with a wrong page.
 */
export type ListName =
  | 'agents'
  | 'approvals'
  | 'approval-queue'
  | 'audit'
  | 'credentials'
  | 'decisions'
  | 'deliveries'
  | 'history'
  | 'invocations'
  | 'keys'
  | 'policies'
  | 'sessions'
  | 'webhooks';

/** The page a list query asks for: its limit and the position its cursor encodes. */
export const pageRequest = (query: { limit: number; cursor?: string | undefined }, list: ListName) => ({
  limit: query.limit,
  after: decodeCursor(query.cursor, 'string', list),
});

/** A list answer: the page's items as presented, and the cursor of the next page (or null). */
export const pageReply = <T>(
  page: { items: T[]; nextAfter: string | null },
  present: (item: T) => unknown,
  list: ListName,
) => ({
  status: 200,
  body: { data: page.items.map(present), next_cursor: encodeCursor(page.nextAfter, list) },
});

/** Cursors are opaque to clients: base64url JSON of the list and the position to continue from. */
export const encodeCursor = (position: string | number | null, list: ListName): string | null =>
  position === null ? null : Buffer.from(JSON.stringify({ l: list, p: position })).toString('base64url');

export function decodeCursor<T extends 'string' | 'number'>(
  cursor: string | undefined,
  kind: T,
  list: ListName,
) {
  if (cursor === undefined) return null;
  const { l, p } = parseCursor(cursor);
  // A cursor without a list name was issued before cursors carried one: still taken for one
  // release, so that a client paging across the upgrade goes on; refuse it from the next release.
  if (l !== undefined && l !== list) throw foreignCursor();
  // A forged cursor may decode to a NUL, 1e400 or 1.5, which the database would fail on: the
  // numbers this API writes are positions (sequence numbers), whole and safe.
  const whole = kind === 'string' || Number.isSafeInteger(p);
  if (typeof p === kind && whole && findUnstorable(p, 'cursor').length === 0)
    return p as T extends 'string' ? string : number;
  throw badCursor();
}

function parseCursor(cursor: string): { l?: unknown; p?: unknown } {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (typeof parsed === 'object' && parsed !== null) return parsed;
  } catch {
    // fall through to the validation error
  }
  throw badCursor();
}

/** A position in a list ordered by (time, id): the session history, the decision log. */
export interface TimedPosition {
  at: Date;
  id: string;
}

/** A time as `toISOString` writes one of years 0000-9999. */
const WRITTEN_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export const encodeTimedCursor = (next: TimedPosition | null, list: ListName): string | null =>
  encodeCursor(next ? `${next.at.toISOString()}|${next.id}` : null, list);

export function decodeTimedCursor(cursor: string | undefined, list: ListName): TimedPosition | null {
  const position = decodeCursor(cursor, 'string', list);
  if (position === null) return null;
  const [at = '', id] = position.split('|');
  // As encodeTimedCursor writes it: a forged time outside years 0000-9999 (which Date takes and
  // PostgreSQL does not) would be a database error, a 500.
  const when = new Date(at);
  if (!WRITTEN_TIME.test(at) || Number.isNaN(when.getTime()) || !id) throw badCursor();
  return { at: when, id };
}

const cursorError = (message: string): DomainError =>
  new DomainError('validation_error', message, { details: [{ path: 'cursor', message }] });

export const badCursor = (): DomainError => cursorError('cursor: not a cursor this API returned');

const foreignCursor = (): DomainError =>
  cursorError('cursor: the cursor of another list (a cursor pages only the list that returned it)');
