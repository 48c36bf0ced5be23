import Koa from 'koa';
import { DomainError } from '../domain/errors';
import type { Infra } from '../infra/container';
import { errorHandler } from './http/error-handler';
import { mountRoutes } from './http/mount-routes';
import { requestId } from './http/request-id';
import { ROUTES } from './routes';

export function createApp(infra: Infra): Koa {
  const app = new Koa({ proxy: false });
  const router = mountRoutes(ROUTES, infra);
  app.use(requestId());
  app.use(errorHandler(infra.logger));
  app.use(router.routes());
  app.use(router.allowedMethods({ throw: true }));
  app.use(async (ctx) => {
    throw new DomainError('not_found', `no route ${ctx.method} ${ctx.path}`);
  });
  app.on('error', () => undefined); // every error is answered and logged by errorHandler
  return app;
}
