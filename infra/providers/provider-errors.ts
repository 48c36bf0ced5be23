import { ProviderError } from '../../domain/providers';
import { redactSecretPieces } from './secret-pieces';

const MAX_MESSAGE = 500;
const SECRET_SHAPES = [
  /\bsk-[A-Za-z0-9_-]{6,}/g,
  /\bBearer\s+[^\s"']+/gi,
  /\b(csk|css|cit)_[A-Za-z0-9_-]{6,}/g,
];

/**
 * Provider text passed on to the caller, minus anything secret: some providers echo the key
 * they were sent, or part of it ("sk-abc…wxyz"), plainly or encoded, in their error messages.
 * Only the head of a long text is read: the rest would be cut anyway.
 */
export function scrubSecret(text: string, secret: string): string {
  let out = redactSecretPieces(text.slice(0, MAX_MESSAGE * 4), secret);
  if (secret.length >= 4) out = out.split(secret).join('[redacted]');
  for (const shape of SECRET_SHAPES) out = out.replace(shape, '[redacted]');
  return out.length > MAX_MESSAGE ? `${out.slice(0, MAX_MESSAGE)}…` : out;
}

/** A failure raised before any answer (a network error) is scrubbed like provider text. */
export function scrubError(err: unknown, secret: string): unknown {
  if (err instanceof Error) err.message = scrubSecret(err.message, secret);
  return err;
}

/** OpenAI and Anthropic both answer errors as `{ error: { message } }`; others vary. */
export function providerMessage(json: unknown, text: string): string {
  const body = json as { error?: { message?: unknown } | string; message?: unknown } | undefined;
  if (body && typeof body.error === 'object' && typeof body.error.message === 'string')
    return body.error.message;
  if (body && typeof body.error === 'string') return body.error;
  if (body && typeof body.message === 'string') return body.message;
  return text.trim() || 'no message';
}

const retryAfter = (header: string | null): number | null => {
  if (!header) return null;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds;
  const at = Date.parse(header);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - Date.now()) / 1000));
};

/** A non-2xx answer: 408, 429 and 5xx (529 is Anthropic's "overloaded") are worth retrying. */
export function errorFromStatus(
  status: number,
  message: string,
  retryAfterHeader: string | null,
): ProviderError {
  // Providers echo parts of the key in their 401/403 messages: none of their text is kept.
  const text =
    status === 401 || status === 403
      ? `provider answered ${status}: the credential was refused`
      : `provider answered ${status}: ${message}`;
  if (status === 429)
    return new ProviderError(
      'retryable',
      'provider_rate_limited',
      text,
      status,
      retryAfter(retryAfterHeader),
    );
  if (status >= 500 || status === 408)
    return new ProviderError('retryable', 'provider_unavailable', text, status, retryAfter(retryAfterHeader));
  if (status === 401 || status === 403)
    return new ProviderError('final', 'provider_auth_failed', text, status);
  return new ProviderError('final', 'provider_rejected', text, status);
}

/** The request was sent and no answer came in time: the provider may have billed it. */
export const timeoutError = (ms: number) =>
  new ProviderError(
    'retryable',
    'provider_timeout',
    `provider did not answer within ${ms} ms`,
    null,
    null,
    'unknown',
  );

/** An answer we cannot read: a 2xx one was most likely billed, so its outcome counts as unknown. */
export const badResponse = (why: string, status: number | null = null) =>
  new ProviderError(
    'final',
    'provider_bad_response',
    `provider answer unusable: ${why}`,
    status,
    null,
    status === null || (status >= 200 && status < 300) ? 'unknown' : 'answered',
  );

/** The caller gave up on a call in flight: the provider may have billed it. */
export const abortedError = () =>
  new ProviderError('retryable', 'provider_aborted', 'the call was cancelled', null, null, 'unknown');

/** Failures while connecting: the request never left, so the provider cannot have billed it. */
const CONNECT_FAILURES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/**
 * Connection-level failures: the provider may be back on the next attempt. One while connecting
 * sent nothing (`provider_unreachable`); one after the request was sent (a reset, a closed socket)
 * leaves the outcome unknown (`provider_connection_lost`).
 */
export function networkError(err: unknown): ProviderError {
  const e = err as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  const code = e.cause?.code ?? e.code ?? 'network error';
  const detail = e.cause?.message ?? e.message ?? String(err);
  if (CONNECT_FAILURES.has(code) || CONNECT_FAILURES.has(e.code ?? ''))
    return new ProviderError(
      'retryable',
      'provider_unreachable',
      `provider unreachable (${code}): ${detail}`,
    );
  return new ProviderError(
    'retryable',
    'provider_connection_lost',
    `the connection to the provider was lost during the call (${code}): ${detail}`,
    null,
    null,
    'unknown',
  );
}
