import { maxHeaderSize, STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ErrorCode } from '../../domain/errors';
import { ERROR_STATUS } from './error-status';
import { newRequestId } from './request-id';

/** What the parser's refusal tells the client, by Node's error code; anything else is malformed. */
function refusalOf(code: string | undefined): { errorCode: ErrorCode; message: string; extra?: object } {
  if (code === 'HPE_HEADER_OVERFLOW')
    return {
      errorCode: 'headers_too_large',
      message: `the request line and headers exceed ${maxHeaderSize} bytes: send a shorter URL or fewer headers`,
      extra: { limit_bytes: maxHeaderSize },
    };
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return { errorCode: 'request_timeout', message: 'the request did not arrive in time' };
  if (code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW')
    return { errorCode: 'payload_too_large', message: 'the chunk extensions of the body are too large' };
  return { errorCode: 'malformed_request', message: 'the request is not valid HTTP/1.1' };
}

/**
 * Requests Node's HTTP parser refuses before any middleware runs (headers past its size limit, a
 * malformed request line, a request that never finished arriving) are answered in the contract's
 * error shape, with a request id, instead of Node's bare status line. The connection then closes.
 */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    // A response already under way on this connection (a pipelined request broke behind a stream)
    // must not have an answer written into its body: the connection just closes, as Node does.
    const answering = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (err.code === 'ECONNRESET' || !socket.writable || answering?.headersSent) return void socket.destroy();
    const { errorCode, message, extra } = refusalOf(err.code);
    const status = ERROR_STATUS[errorCode];
    const requestId = newRequestId();
    const body = JSON.stringify({ error_code: errorCode, message, request_id: requestId, ...extra });
    // Closed once written: the server keeps half-open sockets, and this client may never close.
    socket.end(
      [
        `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}`,
        'Content-Type: application/json; charset=utf-8',
        `Content-Length: ${Buffer.byteLength(body)}`,
        `X-Request-Id: ${requestId}`,
        'Connection: close',
        '',
        body,
      ].join('\r\n'),
      () => socket.destroy(),
    );
  });
}
