import { ControlPlaneError } from '../errors';

/** What the CLI's exit status tells a script; docs/cli.md and `--help` list the same. */
export const EXIT = {
  ok: 0,
  /** The API answered with an error (any ControlPlaneError with a status). */
  refused: 1,
  /** Bad flags or arguments, or no API key. */
  usage: 2,
  /** No answer from the server. */
  unreachable: 3,
  /** An invocation that did not succeed, or an audit chain that failed verification. */
  unsuccessful: 4,
} as const;

export const EXIT_CODES_HELP = `
Exit codes:
  0  success
  1  the API refused the request (stderr: "error_code: message (request_id)")
  2  usage error: bad flags or arguments, or no API key (CP_API_KEY or --api-key)
  3  no answer from the server (is --base-url / CP_BASE_URL right?)
  4  the invocation did not succeed (denied, failed, cancelled, or unfinished at --timeout),
     or audit verify found the chain broken
`;

/** A mistake in how the CLI was called, found after commander parsed the flags. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export function exitCodeOf(error: unknown): number {
  if (error instanceof UsageError) return EXIT.usage;
  if (error instanceof ControlPlaneError)
    return error.status > 0 && error.errorCode !== 'unexpected_answer' ? EXIT.refused : EXIT.unreachable;
  return EXIT.refused;
}

/** The line (and a validation_error's field problems) a person or a log reads on stderr. */
export function describeError(error: unknown): string {
  if (error instanceof UsageError) return `error: ${error.message}\n`;
  if (!(error instanceof ControlPlaneError))
    return `error: ${error instanceof Error ? error.message : String(error)}\n`;
  const id = error.requestId ? ` (${error.requestId})` : '';
  const details = Array.isArray(error.details) ? error.details.map(fieldProblem) : [];
  return `${error.errorCode}: ${error.message}${id}\n${details.join('')}`;
}

/** One field's problem; the API's message mostly starts with the field already (`limit: ...`). */
function fieldProblem(detail: { path?: unknown; message?: unknown }): string {
  const message = String(detail.message);
  const path = typeof detail.path === 'string' ? detail.path : '';
  const named = path === '' || message.startsWith(`${path}:`);
  return `  ${named ? message : `${path}: ${message}`}\n`;
}
