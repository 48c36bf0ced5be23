import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { DatabaseError } from 'pg';
import { Writable } from 'node:stream';
import { errorHandler } from '../../api/http/error-handler';
import { requestId } from '../../api/http/request-id';
import { createLogger } from '../../infra/logger';

async function serve(fail: () => never) {
  const lines: string[] = [];
  const logger = createLogger(
    'info',
    new Writable({ write: (c, _e, done) => (lines.push(String(c)), done()) }),
  );
  const app = new Koa();
  app.use(requestId());
  app.use(errorHandler(logger));
  app.use(async () => fail());
  const server = createServer(app.callback());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/boom`, {
    headers: { 'x-request-id': 'req-abc' },
  });
  server.close();
  return { res, body: (await res.json()) as Record<string, unknown>, lines };
}

describe('error handler', () => {
  it('answers a bug with a bare internal_error and logs the details under the request id', async () => {
    const { res, body, lines } = await serve(() => {
      throw new Error('db password is hunter2');
    });
    expect(res.status).toBe(500);
    expect(body).toEqual({
      error_code: 'internal_error',
      message: expect.any(String),
      request_id: 'req-abc',
    });
    expect(JSON.stringify(body)).not.toContain('hunter2');
    expect(lines.join('')).toContain('req-abc');
  });

  it('answers an unreachable store with 503 unavailable and Retry-After', async () => {
    const { res, body } = await serve(() => {
      throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('2');
    expect(body.error_code).toBe('unavailable');
    expect(JSON.stringify(body)).not.toContain('5432');
  });

  it('logs a database error by code, constraint and table, never its SQL or the row it held', async () => {
    const { res, lines } = await serve(() => {
      const sql = `insert into "users" ("email", "password_hash") values ('a@b.test', 'scrypt$1$2$3$c2FsdA==')`;
      throw Object.assign(
        new DatabaseError(`${sql} - violates check constraint "users_name_check"`, 0, 'error'),
        {
          code: '23514',
          severity: 'ERROR',
          table: 'users',
          constraint: 'users_name_check',
          routine: 'ExecConstraints',
          detail: 'Failing row contains (a@b.test, scrypt$1$2$3$c2FsdA==).',
        },
      );
    });
    expect(res.status).toBe(500);
    const logged = lines.join('');
    expect(logged).toContain('"constraint":"users_name_check"');
    expect(logged).toContain('"table":"users"');
    expect(logged).toContain('"code":"23514"');
    expect(logged).not.toContain('scrypt$');
    expect(logged).not.toContain('a@b.test');
  });
});
