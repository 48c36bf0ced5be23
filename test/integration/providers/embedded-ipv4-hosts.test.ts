import { ProviderError, type CompletionRequest } from '../../../domain/providers';
import { ProviderRouter } from '../../../infra/providers/provider-router';
import { StubProvider } from '../../support/stub-provider';

let stub: StubProvider;
const guarded = new ProviderRouter({ allowPrivateHosts: false });

beforeAll(async () => (stub = await new StubProvider().start()));
afterAll(async () => {
  await stub.stop();
  await guarded.close();
});

const port = () => new URL(stub.url).port;

// Each IPv6 spelling stands for 127.0.0.1 (or a private range): the transport must refuse it
// before connecting, not try and fail with whatever the network says.
describe('provider HTTP transport and IPv6 forms of private addresses', () => {
  it.each([
    ['IPv4-mapped, hex', '::ffff:7f00:1'],
    ['IPv4-translated', '::ffff:0:7f00:1'],
    ['IPv4-compatible', '::127.0.0.1'],
    ['NAT64', '64:ff9b::7f00:1'],
    ['6to4', '2002:7f00:1::1'],
    ['site-local', 'fec0::1'],
  ])('refuses %s [%s] with provider_host_blocked, sending nothing', async (_form, ip) => {
    stub.answer(200, { choices: [{ message: { content: 'ok' } }] });
    const before = stub.requests.length;
    const request: CompletionRequest = {
      provider: 'openai_compatible',
      baseUrl: `http://[${ip}]:${port()}/v1`,
      secret: 'sk-transport-test-123456',
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      maxTokens: 10,
      timeoutMs: 2_000,
    };
    const err = await guarded.complete(request).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ProviderError);
    expect(err).toMatchObject({ kind: 'final', code: 'provider_host_blocked' });
    expect(stub.requests.length).toBe(before);
  });
});
