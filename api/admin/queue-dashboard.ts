import type { Context, Middleware } from 'koa';
import type { ErrorCode } from '../../domain/errors';
import type { Infra } from '../../infra/container';
import { ERROR_STATUS } from '../http/error-status';
import { basicPassword, bearerToken, isSameSecret } from '../../infra/auth/presented-secret';
import { FailureLimit } from '../../infra/http/rate-limiters';
import { setSecurityHeaders } from '../page/page-headers';
import { allowOnlyReads } from '../http/static-file';
import { DASHBOARD_PATH, queueBoard } from './queue-board';

/**
 * bull-board's page: its own scripts, styles and API only. Its React build writes style
 * attributes (hence 'unsafe-inline' for styles, never for scripts) and sets <base href>.
 */
const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "base-uri 'self'",
].join('; ');

/** bull-board's page links Google's fonts: a dashboard opened must not be told to a third party. */
const THIRD_PARTY_FONTS = /<link[^>]*fonts\.(googleapis|gstatic)\.com[^>]*>\s*/g;

function withoutThirdPartyFonts(ctx: Context): void {
  if (typeof ctx.body === 'string' && ctx.response.is('html'))
    ctx.body = ctx.body.replace(THIRD_PARTY_FONTS, '');
}

const isDashboardPath = (path: string): boolean =>
  path === DASHBOARD_PATH || path.startsWith(`${DASHBOARD_PATH}/`);

/**
 * Written here rather than thrown: the error handler's challenge is Bearer, and a browser only
 * prompts for a user name and password when it is asked for Basic.
 */
function refuse(ctx: Context, code: ErrorCode, message: string): void {
  ctx.status = ERROR_STATUS[code];
  ctx.set('WWW-Authenticate', 'Basic realm="queues"');
  ctx.body = { error_code: code, message, request_id: ctx.state.requestId as string };
}

/**
 * The queue dashboard (bull-board) at /admin/queues, for the operator: off (404) unless
 * CP_QUEUE_DASHBOARD_TOKEN is set, and then opened by that token alone. No org's key or person's
 * session opens it: it shows every org's jobs. Past CP_AUTH_FAILURES_PER_MINUTE wrong tokens from
 * an address, that address gets 429 for the rest of the minute.
 */
export function queueDashboard(infra: Infra): Middleware {
  const token = infra.config.CP_QUEUE_DASHBOARD_TOKEN;
  if (!token) return (_ctx, next) => next();
  const board = queueBoard(infra);
  const failures = new FailureLimit(
    infra.redis,
    `${infra.config.CP_REDIS_PREFIX}:rl:dashfail`,
    infra.config.CP_AUTH_FAILURES_PER_MINUTE,
  );
  return async (ctx, next) => {
    if (!isDashboardPath(ctx.path)) return next();
    ctx.state.metricsRoute = DASHBOARD_PATH;
    ctx.set('Cache-Control', 'no-store');
    setSecurityHeaders(ctx, DASHBOARD_CSP);
    // Bearer, or the password of HTTP Basic (any user name), so a browser's own sign-in prompt opens it.
    const authorization = ctx.get('Authorization');
    const presented = bearerToken(authorization) ?? basicPassword(authorization);
    if (presented === null) return refuse(ctx, 'missing_credentials', 'the queue dashboard needs its token');
    // Wrong tokens are counted per address, as failed API keys are. Past the limit even the right
    // token waits out the minute there, so answers never tell a guess that would have opened it.
    await failures.check(ctx.ip, 'too many wrong queue dashboard tokens from this address');
    if (!isSameSecret(presented, token)) {
      await failures.record(ctx.ip);
      return refuse(ctx, 'invalid_credentials', 'that is not the queue dashboard token');
    }
    // Read-only: bull-board refuses its own writes (PUT) with 405, and answered 500 to the
    // methods it has no route for.
    allowOnlyReads(ctx);
    await board(ctx, next);
    withoutThirdPartyFonts(ctx);
  };
}
