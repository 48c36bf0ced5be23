import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { answerClientErrors } from '../../api/http/client-errors';

/**
 * What Node's HTTP parser refuses, answered in the contract's shape: a plain server with the
 * handler, a raw socket as the client.
 */
let server: Server;
let port: number;
const connections = () => new Promise<number>((resolve) => server.getConnections((_e, n) => resolve(n)));

beforeEach(async () => {
  // One route that starts an answer and never ends it (a stream in flight).
  server = createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'text/plain' }).write('streaming'),
  );
  answerClientErrors(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterEach(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** Sends `text` on a half-open socket (it never closes its side) and collects what comes back. */
function send(text: string, forMs = 300): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true }, () => socket.write(text));
    let got = '';
    socket.on('data', (chunk: Buffer) => (got += chunk.toString()));
    socket.on('error', () => undefined);
    setTimeout(() => (socket.destroy(), resolve(got)), forMs);
  });
}

it('answers a request that is not HTTP with 400 malformed_request, then closes the connection itself', async () => {
  const got = await send('NOT HTTP AT ALL\r\n\r\n');
  expect(got).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
  const body = JSON.parse(got.slice(got.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;
  expect(body).toMatchObject({ error_code: 'malformed_request', request_id: expect.stringMatching(/^req_/) });
  expect(got).toContain(`X-Request-Id: ${String(body.request_id)}`);
});

it('does not leave a half-open client connected', async () => {
  const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true }, () => socket.write('BAD\r\n\r\n'));
  socket.on('error', () => undefined);
  await new Promise((r) => setTimeout(r, 300));
  expect(await connections()).toBe(0);
  socket.destroy();
});

it('answers headers past the limit with 431 headers_too_large and the limit', async () => {
  const got = await send(`GET /${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
  expect(got).toMatch(/^HTTP\/1\.1 431 /);
  expect(JSON.parse(got.slice(got.indexOf('\r\n\r\n') + 4))).toMatchObject({
    error_code: 'headers_too_large',
    limit_bytes: expect.any(Number),
  });
});

it('writes nothing into a response already under way: a bad pipelined request just closes the connection', async () => {
  const got = await send('GET /stream HTTP/1.1\r\nHost: x\r\n\r\nNOT HTTP AT ALL\r\n\r\n');
  // Node may drop the answer's first bytes with the connection; it never sends a second answer.
  expect(got).not.toContain('malformed_request');
  expect(got.match(/HTTP\/1\.1 /g)?.length ?? 0).toBeLessThanOrEqual(1);
  expect(await connections()).toBe(0);
});
