import type { Middleware } from 'koa';
import { startSpan } from '../../infra/telemetry';

/**
 * A server span per request, continuing the caller's trace when it sent `traceparent`. Its context
 * is handed to the jobs a request enqueues, so one trace spans the request, the workers and the
 * provider call.
 */
export const tracing = (): Middleware => async (ctx, next) => {
  const traced = startSpan(`${ctx.method} ${ctx.path}`, 'server', ctx.headers, {
    'http.request.method': ctx.method,
  });
  ctx.state.trace = traced.carrier;
  let failure: unknown;
  try {
    await next();
  } catch (err) {
    failure = err;
    throw err;
  } finally {
    // Named by route template, not path: ids would make every span name unique.
    const route = (ctx as unknown as { _matchedRoute?: string })._matchedRoute;
    if (route) traced.span.updateName(`${ctx.method} ${route}`);
    traced.span.setAttribute('http.response.status_code', ctx.status);
    traced.end(failure ?? (ctx.status >= 500 ? new Error(`status ${ctx.status}`) : undefined));
  }
};
