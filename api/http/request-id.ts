import type { Middleware } from 'koa';
import { randomText } from '../../domain/ids';

const CLIENT_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Echoes a sane client `X-Request-Id`, or makes one; every response carries it. */
export const requestId = (): Middleware => async (ctx, next) => {
  const sent = ctx.get('X-Request-Id');
  const id = CLIENT_ID.test(sent) ? sent : `req_${randomText(20)}`;
  ctx.state.requestId = id;
  ctx.set('X-Request-Id', id);
  await next();
};
