import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  eventually,
  invokeBody,
  openSession,
  setUpInvoking,
  type InvokeSetup,
} from '../support/invoke-fixtures';
import { startTestApp, type TestApp } from '../support/test-app';

/**
 * A request must arrive within CP_HEADERS_TIMEOUT_MS (its headers) and CP_REQUEST_TIMEOUT_MS (the
 * whole of it), else 408: a client that stalls mid-request must not hold its connection for
 * Node's five minutes. Only the arrival is timed: an answer that takes longer is not cut, and an
 * idle keep-alive connection is not taken for a stalled request.
 */
let app: TestApp;
let setup: InvokeSetup;
let port: number;

beforeAll(async () => {
  app = await startTestApp({
    workers: true,
    captureLogs: true,
    env: { CP_HEADERS_TIMEOUT_MS: '300', CP_REQUEST_TIMEOUT_MS: '800' },
  });
  setup = await setUpInvoking(app.http, { models: ['mock-slow-1500'] });
  port = Number(new URL(app.http.baseUrl).port);
}, 60_000);
afterAll(() => app.close());

/** Writes `text` on a raw connection and resolves with all the server sends before it closes. */
function stall(text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(text));
    let got = '';
    socket.on('data', (chunk: Buffer) => (got += chunk.toString()));
    socket.on('close', () => resolve(got));
    socket.on('error', reject);
  });
}

const bodyOf = (answer: string) =>
  JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;

it('answers headers that stop arriving with 408 request_timeout and closes the connection', async () => {
  const answer = await stall('POST /v1/orgs/signup HTTP/1.1\r\nHost: localhost\r\nContent-Ty');
  expect(answer).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
  expect(bodyOf(answer)).toMatchObject({ error_code: 'request_timeout', request_id: expect.any(String) });
}, 10_000);

it('answers a body that stops arriving with 408 request_timeout, on a public route too', async () => {
  const answer = await stall(
    'POST /v1/orgs/signup HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n' +
      'Content-Length: 100\r\n\r\n{"org_name"',
  );
  expect(answer).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
  expect(bodyOf(answer)).toMatchObject({ error_code: 'request_timeout' });
  // The access log says what the client got, not a 400 for the body read the timeout cut off.
  const logged = await eventually(() =>
    app.logs
      .map((line) => JSON.parse(line) as { msg?: string; path?: string; status?: number })
      .find((l) => l.msg === 'request' && l.path === '/v1/orgs/signup' && l.status !== 201),
  );
  expect(logged.status).toBe(408);
}, 10_000);

it('does not cut an answer that takes longer than the request timeout (a sync invoke)', async () => {
  const session = await openSession(app.http, setup.org.adminKey, {
    agent_id: setup.agentId,
    max_cost_usd: 1,
  });
  const res = await app.http.post<{ status: string }>(
    '/v1/llm/invoke?wait=10',
    invokeBody(session.id, { model: 'mock-slow-1500' }),
    setup.org.adminKey,
  );
  expect(res.status).toBe(200);
  expect(res.body.status).toBe('succeeded');
}, 20_000);

it('keeps an idle keep-alive connection past both timeouts for the next request', async () => {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const get = () =>
    new Promise<{ status: number; reused: boolean }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/health', agent }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket }));
      });
      req.on('error', reject);
      req.end();
    });
  try {
    expect(await get()).toEqual({ status: 200, reused: false });
    await sleep(1_500);
    expect(await get()).toEqual({ status: 200, reused: true });
  } finally {
    agent.destroy();
  }
}, 10_000);
