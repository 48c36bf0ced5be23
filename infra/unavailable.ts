/**
 * Recognises errors that mean "a backing store is unreachable" rather than "a bug", so the API
 * answers 503 unavailable with Retry-After instead of 500.
 */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'EAI_AGAIN',
]);
// PostgreSQL: admin shutdown, crash shutdown, cannot connect now, too many connections.
const PG_UNAVAILABLE = new Set(['57P01', '57P02', '57P03', '53300', '08000', '08001', '08003', '08006']);
const MESSAGES = [
  /Timeout acquiring a connection/i,
  /timeout exceeded when trying to connect/i,
  /Connection terminated/i,
  /Connection is closed/i,
  /enableOfflineQueue/i,
  /Reached the max retries per request/i,
  /Client has encountered a connection error/i,
  /Redis is not ready|Redis connection/i,
  /Command timed out/i,
  /connect ECONNREFUSED/i,
  /the database system is (starting up|shutting down)/i,
];

export function isUnavailableError(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 3) return false;
  const e = err as { code?: unknown; message?: unknown; name?: unknown; cause?: unknown; previous?: unknown };
  if (typeof e.code === 'string' && (NETWORK_CODES.has(e.code) || PG_UNAVAILABLE.has(e.code))) return true;
  if (e.name === 'ConnectionException' || e.name === 'MaxRetriesPerRequestError') return true;
  if (typeof e.message === 'string' && MESSAGES.some((m) => m.test(e.message as string))) return true;
  return isUnavailableError(e.cause, depth + 1) || isUnavailableError(e.previous, depth + 1);
}
