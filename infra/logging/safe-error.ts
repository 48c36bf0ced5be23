import { DriverException } from '@mikro-orm/core';
import { DatabaseError } from 'pg';

/** What a log line says about an error: never a value the failed operation carried. */
export interface ErrorDescription {
  type: string;
  message?: string;
  stack?: string;
  code?: string;
  severity?: string;
  schema?: string;
  table?: string;
  column?: string;
  constraint?: string;
  routine?: string;
  cause?: ErrorDescription;
}

// pg's fields that name what failed. `detail`, `where`, `internalQuery` and the message hold values.
const DATABASE_FIELDS = ['code', 'severity', 'schema', 'table', 'column', 'constraint', 'routine'] as const;

// knex puts the statement before the driver's message ("<sql> - <message>"), with values inlined.
const SQL_PREFIX =
  /^\s*\(?\s*(select|insert|update|delete|with|merge|copy|begin|commit|rollback|savepoint|release|alter|create|drop|truncate|lock|set|call|do|explain|values)\b[\s\S]* - /i;

const MAX_CAUSE_DEPTH = 3;

// Descriptions already made: the logger's serializer passes them through when a call site described first.
const DESCRIBED = new WeakSet<object>();

type Fields = Record<string, unknown>;

/** pg's error, or MikroORM's wrapper of it (which copies its fields and puts the SQL in `message`). */
const isDatabaseError = (err: Fields): boolean =>
  err instanceof DatabaseError ||
  err instanceof DriverException ||
  (typeof err.severity === 'string' && typeof err.routine === 'string');

const stringField = (err: Fields, name: string): string | undefined =>
  typeof err[name] === 'string' ? err[name] : undefined;

/** The class when it says more than `Error` (pg names its errors plain "error"), else the name. */
function typeName(err: Fields): string {
  const ctor = (err.constructor as { name?: unknown } | undefined)?.name;
  if (typeof ctor === 'string' && ctor !== '' && ctor !== 'Error' && ctor !== 'Object') return ctor;
  return stringField(err, 'name') ?? (typeof ctor === 'string' ? ctor : 'object');
}

/** The message, or only the driver's part of it when a statement leads it. */
function safeMessage(message: string): string {
  if (!SQL_PREFIX.test(message)) return message;
  return `[statement withheld] - ${message.slice(message.lastIndexOf(' - ') + 3)}`;
}

/** The stack's frames (file, line, function) under a first line we wrote, not the original message. */
function safeStack(stack: unknown, head: string): string | undefined {
  if (typeof stack !== 'string') return undefined;
  const frames = stack.split('\n').filter((line) => /^\s+at /.test(line));
  return [head, ...frames].join('\n');
}

function describeDatabaseError(err: Fields, type: string): ErrorDescription {
  const described: ErrorDescription = { type };
  for (const field of DATABASE_FIELDS) {
    const value = stringField(err, field);
    if (value !== undefined) described[field] = value;
  }
  const stack = safeStack(err.stack, `${type} (database error ${described.code ?? 'without code'})`);
  return stack ? { ...described, stack } : described;
}

/**
 * Describes an error for a log line. A database error is told by its code, constraint, table,
 * column and routine only: its message, `detail` and stack head carry the SQL and the row's values
 * (a password hash, a secret's digest). Other errors keep their message, with a leading statement
 * cut off. Anything thrown that is not an error is named by its type alone.
 */
export function describeError(err: unknown, depth = 0): ErrorDescription {
  if (err === null || typeof err !== 'object') return { type: err === null ? 'null' : typeof err };
  if (DESCRIBED.has(err)) return err as ErrorDescription;
  const fields = err as Fields;
  const type = typeName(fields);
  const described = isDatabaseError(fields)
    ? describeDatabaseError(fields, type)
    : describeOther(fields, type);
  if (fields.cause !== undefined && depth < MAX_CAUSE_DEPTH)
    described.cause = describeError(fields.cause, depth + 1);
  DESCRIBED.add(described);
  return described;
}

function describeOther(err: Fields, type: string): ErrorDescription {
  if (!(err instanceof Error)) return { type };
  const message = safeMessage(err.message);
  const described: ErrorDescription = { type, message };
  const code = stringField(err as unknown as Fields, 'code');
  if (code !== undefined) described.code = code;
  const stack = safeStack(err.stack, `${type}: ${message}`);
  return stack ? { ...described, stack } : described;
}
