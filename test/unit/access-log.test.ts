import { Writable } from 'node:stream';
import type { Context } from 'koa';
import { accessLog } from '../../api/http/access-log';
import { createLogger } from '../../infra/logger';

const capture = (level: string) => {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write: (chunk, _enc, done) => (lines.push(JSON.parse(String(chunk))), done()),
  });
  return { lines, logger: createLogger(level, sink) };
};

const request = (status: number) =>
  ({ method: 'POST', path: '/v1/llm/invoke', status, state: { requestId: 'req_1' } }) as unknown as Context;

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('the access log', () => {
  it('writes one line per request once it is answered: id, method, path, status and milliseconds', async () => {
    const { lines, logger } = capture('info');
    const ctx = request(200);
    await accessLog(logger)(ctx, async () => void (ctx.status = 202));
    await flush();
    expect(lines).toEqual([
      expect.objectContaining({
        msg: 'request',
        level: 30,
        service: 'control-plane',
        request_id: 'req_1',
        method: 'POST',
        path: '/v1/llm/invoke',
        status: 202,
        ms: expect.any(Number),
      }),
    ]);
  });

  it('writes it when the request failed too, with the status set so far', async () => {
    const { lines, logger } = capture('info');
    await expect(accessLog(logger)(request(404), () => Promise.reject(new Error('boom')))).rejects.toThrow(
      'boom',
    );
    await flush();
    expect(lines).toMatchObject([{ msg: 'request', status: 404 }]);
  });

  it('follows the service log level', async () => {
    const { lines, logger } = capture('warn');
    await accessLog(logger)(request(200), async () => undefined);
    await flush();
    expect(lines).toEqual([]);
  });
});
