import type { Context } from 'koa';
import getRawBody from 'raw-body';
import { DomainError, invalidField } from '../../domain/errors';
import { refusedKey } from '../../domain/duplicate-keys';

const hasBody = (ctx: Context): boolean =>
  Boolean(ctx.get('Transfer-Encoding')) || Number(ctx.get('Content-Length') || 0) > 0;

/** Refuses bytes that are not UTF-8: read leniently, they were stored as U+FFFD (QA: a key named "��"). */
const utf8 = new TextDecoder('utf-8', { fatal: true });

function utf8Text(bytes: Buffer): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new DomainError('invalid_json', 'the body is not valid UTF-8: send the JSON body as UTF-8');
  }
}

/**
 * Reads a JSON body: 415 for another content type, a charset other than UTF-8 or a Content-Encoding, 413 past the
 * limit (before reading it all), 400 `invalid_json` for malformed JSON and `validation_error` for a key named twice in
 * one object. A request without a body yields undefined.
 */
export async function readJsonBody(ctx: Context, limitBytes: number): Promise<unknown> {
  if (!hasBody(ctx)) return undefined;
  if (!ctx.is('application/json', '+json')) {
    throw new DomainError(
      'unsupported_media_type',
      'send the body as JSON with Content-Type: application/json',
    );
  }
  // JSON is UTF-8 (RFC 8259); a body said to be in another charset would be read as the wrong text.
  const charset = ctx.request.charset.toLowerCase();
  if (charset && charset !== 'utf-8' && charset !== 'utf8') {
    throw new DomainError(
      'unsupported_media_type',
      `charset ${charset} is not accepted: send the JSON body as UTF-8 (Content-Type: application/json)`,
    );
  }
  // Bodies are read as sent: a compressed one would be parsed as its bytes (or, with an encoding
  // it does not name, taken as plain JSON), so any encoding but identity is refused.
  const encoding = ctx.get('Content-Encoding').trim().toLowerCase();
  if (encoding && encoding !== 'identity') {
    throw new DomainError(
      'unsupported_media_type',
      `Content-Encoding ${encoding} is not accepted: send the JSON body uncompressed`,
    );
  }
  let bytes: Buffer;
  try {
    bytes = await getRawBody(ctx.req, { limit: limitBytes, length: ctx.get('Content-Length') || undefined });
  } catch (err) {
    if ((err as { type?: string }).type === 'entity.too.large') {
      throw new DomainError('payload_too_large', `the body is over the limit of ${limitBytes} bytes`, {
        limit_bytes: limitBytes,
      });
    }
    // Cut off: the client hung up, or the server's CP_REQUEST_TIMEOUT_MS ended it (and answered 408).
    if ((err as { type?: string }).type === 'request.aborted')
      throw new DomainError('request_timeout', 'the body stopped arriving before its end');
    throw new DomainError('invalid_json', 'the body could not be read as UTF-8 JSON');
  }
  const text = utf8Text(bytes);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new DomainError('invalid_json', 'the body is not valid JSON');
  }
  const refused = refusedKey(text);
  if (refused?.reason === 'repeated')
    throw invalidField(
      refused.key,
      `the key ${JSON.stringify(refused.key.slice(0, 64))} appears twice in one object: send each key once`,
    );
  if (refused) throw invalidField(refused.key, 'a key named "__proto__" is not accepted anywhere in a body');
  return body;
}
