import type { Middleware } from 'koa';
import type { Logger } from '../../infra/logger';

/**
 * One line per request, after it is answered: enough to follow a request by its id across the
 * service's logs. The query string is left out (cursors and filters are noise), bodies always.
 */
export function accessLog(logger: Logger): Middleware {
  return async (ctx, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      if (logger.isLevelEnabled('info'))
        logger.info(
          {
            request_id: ctx.state.requestId as string,
            method: ctx.method,
            path: ctx.path,
            status: ctx.status,
            ms: Math.round((performance.now() - started) * 10) / 10,
          },
          'request',
        );
    }
  };
}
