import type { Middleware } from 'koa';
import { randomText } from '../../domain/ids';

/**
 * What a client's `X-Request-Id` may be to be echoed: 1 to 128 visible ASCII characters
 * (0x21-0x7E). Anything else (empty, longer, spaces, control or non-ASCII characters) is replaced.
 */
export const CLIENT_REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

/** The rule, as the OpenAPI description states it. */
export const REQUEST_ID_RULE =
  'Every response carries X-Request-Id: the one the client sent, echoed when it is 1 to 128 visible ' +
  'ASCII characters (0x21-0x7E); otherwise (empty, longer, spaces, control or non-ASCII characters) ' +
  'one the service makes (req_...).';

/** A request id the service makes. */
export const newRequestId = (): string => `req_${randomText(20)}`;

/** Echoes a sane client `X-Request-Id`, or makes one; every response carries it. */
export const requestId = (): Middleware => async (ctx, next) => {
  const sent = ctx.get('X-Request-Id');
  const id = CLIENT_REQUEST_ID.test(sent) ? sent : newRequestId();
  ctx.state.requestId = id;
  ctx.set('X-Request-Id', id);
  await next();
};
