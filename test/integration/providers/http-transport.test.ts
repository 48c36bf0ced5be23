import { lookup } from 'node:dns/promises';
import { createServer, type Server } from 'node:net';
import { hostname } from 'node:os';
import { isLocalName, isPrivateAddress } from '../../../domain/credentials/provider-host';
import type { AddressInfo } from 'node:net';
import { ProviderError, type CompletionRequest } from '../../../domain/providers';
import { ProviderRouter } from '../../../infra/providers/provider-router';
import { StubProvider } from '../../support/stub-provider';

let stub: StubProvider;
const open = new ProviderRouter({ allowPrivateHosts: true, maxResponseBytes: 64 * 1024 });
const guarded = new ProviderRouter({ allowPrivateHosts: false });

beforeAll(async () => (stub = await new StubProvider().start()));
afterAll(async () => {
  await stub.stop();
  await Promise.all([open.close(), guarded.close()]);
});

const request = (over: Partial<CompletionRequest> = {}): CompletionRequest => ({
  provider: 'openai_compatible',
  baseUrl: stub.url,
  secret: 'sk-transport-test-123456',
  model: 'm',
  messages: [{ role: 'user', content: 'hi' }],
  maxTokens: 10,
  timeoutMs: 2_000,
  ...over,
});

const failure = (router: ProviderRouter, req: CompletionRequest) =>
  router.complete(req).then(
    () => {
      throw new Error('expected a ProviderError');
    },
    (e: unknown) => {
      expect(e).toBeInstanceOf(ProviderError);
      return e as ProviderError;
    },
  );

const ok = { choices: [{ message: { content: 'ok' } }], usage: { prompt_tokens: 1, completion_tokens: 1 } };

describe('provider HTTP transport', () => {
  it('gives up after the timeout with a retryable provider_timeout', async () => {
    stub.handler = () => undefined; // never answers
    const started = Date.now();
    const err = await failure(open, request({ timeoutMs: 200 }));
    expect(err).toMatchObject({ kind: 'retryable', code: 'provider_timeout' });
    expect(Date.now() - started).toBeLessThan(1_500);
  });

  it('stops when the caller aborts', async () => {
    stub.handler = () => undefined;
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const err = await failure(open, request({ signal: controller.signal }));
    expect(err).toMatchObject({ kind: 'retryable', code: 'provider_aborted' });
  });

  it('reports a refused connection as retryable provider_unreachable', async () => {
    const server: Server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    await new Promise((resolve) => server.close(resolve));
    const err = await failure(open, request({ baseUrl: `http://127.0.0.1:${port}` }));
    expect(err).toMatchObject({ kind: 'retryable', code: 'provider_unreachable' });
  });

  it('refuses an answer larger than the cap', async () => {
    stub.answer(200, { ...ok, padding: 'x'.repeat(100 * 1024) });
    expect(await failure(open, request())).toMatchObject({ kind: 'final', code: 'provider_bad_response' });
  });

  it('reuses connections (keep-alive)', async () => {
    stub.answer(200, ok);
    const before = stub.requests.length;
    for (let i = 0; i < 6; i++) await open.complete(request());
    const ports = stub.requests.slice(before).map((r) => r.remotePort);
    expect(ports).toHaveLength(6);
    expect(ports.every((p) => typeof p === 'number')).toBe(true);
    // undici returns a socket to its pool a tick after the answer, so a call sent at once may open
    // a second connection; six calls without keep-alive would open six.
    expect(new Set(ports).size).toBeLessThanOrEqual(2);
  });

  it.each([
    ['a loopback address', (url: string) => url],
    ['localhost', (url: string) => url.replace('127.0.0.1', 'localhost')],
    ['IPv4-mapped IPv6', (url: string) => url.replace('127.0.0.1', '[::ffff:127.0.0.1]')],
  ])('refuses %s unless private hosts are allowed', async (_label, rewrite) => {
    stub.answer(200, ok);
    const before = stub.requests.length;
    const err = await failure(guarded, request({ baseUrl: rewrite(stub.url) }));
    expect(err).toMatchObject({ kind: 'final', code: 'provider_host_blocked' });
    expect(stub.requests.length).toBe(before);
    expect((await open.complete(request({ baseUrl: rewrite(stub.url) }))).output.content).toBe('ok');
  });

  it('refuses a name that resolves to a private address (checked after DNS, at connect time)', async () => {
    // The machine's own host name is not a local name by its spelling, but resolves to a
    // loopback or private address on any machine (containers, laptops, CI runners alike).
    const name = hostname();
    const { address } = await lookup(name);
    expect(isPrivateAddress(address)).toBe(true);
    expect(isLocalName(name)).toBe(false);
    stub.answer(200, ok);
    const before = stub.requests.length;
    const url = stub.url.replace('127.0.0.1', name);
    const err = await failure(guarded, request({ baseUrl: url }));
    expect(err).toMatchObject({ kind: 'final', code: 'provider_host_blocked' });
    expect(stub.requests.length).toBe(before);
  });
});
