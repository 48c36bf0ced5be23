import type { Context } from 'koa';
import type { RateDecision } from '../../infra/http/rate-limiters';

/** The IETF draft `RateLimit-*` fields, on every rate-limited route's response. */
export function setRateHeaders(ctx: Context, rate: RateDecision): void {
  ctx.set('RateLimit-Limit', String(rate.limit));
  ctx.set('RateLimit-Remaining', String(rate.remaining));
  ctx.set('RateLimit-Reset', String(rate.resetSeconds));
}
