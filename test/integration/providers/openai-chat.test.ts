import { ProviderError, type CompletionRequest } from '../../../domain/providers';
import { ProviderRouter } from '../../../infra/providers/provider-router';
import { StubProvider } from '../../support/stub-provider';

const SECRET = 'sk-proj-SECRETSECRETSECRET1234';
let stub: StubProvider;
const router = new ProviderRouter({ allowPrivateHosts: true });

beforeAll(async () => (stub = await new StubProvider().start()));
afterAll(async () => {
  await stub.stop();
  await router.close();
});
beforeEach(() => stub.requests.splice(0));

const request = (over: Partial<CompletionRequest> = {}): CompletionRequest => ({
  provider: 'openai_compatible',
  baseUrl: `${stub.url}/v1/`,
  secret: SECRET,
  model: 'llama-3-8b',
  messages: [
    { role: 'system', content: 'be brief' },
    { role: 'user', content: 'hello' },
  ],
  maxTokens: 50,
  timeoutMs: 2_000,
  ...over,
});

const completion = {
  id: 'chatcmpl-1',
  model: 'llama-3-8b-instruct',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hi there' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 },
};

async function failure(req: CompletionRequest): Promise<ProviderError> {
  const err = await router.complete(req).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProviderError);
  return err as ProviderError;
}

describe('openai and openai_compatible (Chat Completions)', () => {
  it('sends the request the API expects and maps output and usage', async () => {
    stub.answer(200, completion);
    const result = await router.complete(request({ temperature: 0.2 }));
    expect(result).toEqual({
      output: { role: 'assistant', content: 'hi there' },
      usage: { inputTokens: 12, outputTokens: 3 },
      model: 'llama-3-8b-instruct',
      finishReason: 'stop',
    });
    const [sent] = stub.requests;
    expect(sent?.method).toBe('POST');
    expect(sent?.path).toBe('/v1/chat/completions');
    expect(sent?.headers.authorization).toBe(`Bearer ${SECRET}`);
    expect(sent?.headers['content-type']).toBe('application/json');
    expect(sent?.body).toEqual({
      model: 'llama-3-8b',
      messages: request().messages,
      max_tokens: 50,
      temperature: 0.2,
    });
  });

  it('sends max_completion_tokens to OpenAI itself', async () => {
    stub.answer(200, completion);
    await router.complete(request({ provider: 'openai', baseUrl: stub.url }));
    expect(stub.requests[0]?.body).toMatchObject({ max_completion_tokens: 50 });
    expect(stub.requests[0]?.body).not.toHaveProperty('max_tokens');
    expect(stub.requests[0]?.path).toBe('/chat/completions');
  });

  it('treats a null content (a refusal or tool call) as empty text', async () => {
    stub.answer(200, { ...completion, choices: [{ message: { role: 'assistant', content: null } }] });
    expect((await router.complete(request())).output.content).toBe('');
  });

  it('refuses an openai_compatible credential without base_url as final', async () => {
    const err = await failure(request({ baseUrl: null }));
    expect(err).toMatchObject({ kind: 'final', code: 'provider_misconfigured' });
  });

  it('classifies 429 as retryable with the Retry-After it was given', async () => {
    stub.answer(429, { error: { message: 'Rate limit reached', type: 'requests' } }, { 'retry-after': '7' });
    const err = await failure(request());
    expect(err).toMatchObject({
      kind: 'retryable',
      code: 'provider_rate_limited',
      status: 429,
      retryAfterSeconds: 7,
    });
    expect(err.message).toContain('Rate limit reached');
  });

  it.each([500, 502, 503])('classifies %i as retryable', async (status) => {
    stub.answer(status, { error: { message: 'upstream trouble' } });
    expect(await failure(request())).toMatchObject({
      kind: 'retryable',
      code: 'provider_unavailable',
      status,
    });
  });

  it.each([
    [400, 'provider_rejected'],
    [404, 'provider_rejected'],
    [422, 'provider_rejected'],
  ])('classifies %i as final (%s) and passes the provider message on', async (status, code) => {
    stub.answer(status, { error: { message: `The model does not exist (${status})` } });
    const err = await failure(request());
    expect(err).toMatchObject({ kind: 'final', code, status });
    expect(err.message).toContain(`The model does not exist (${status})`);
  });

  it.each([401, 403])(
    'keeps only the status and a fixed message of a %i that echoes parts of the key',
    async (status) => {
      const echo = `Incorrect API key provided: ${SECRET.slice(0, 14)}*****${SECRET.slice(-4)}`;
      stub.answer(status, {
        error: { message: `${echo}. Basic ${Buffer.from(`u:${SECRET}`).toString('base64')}` },
      });
      const err = await failure(request());
      expect(err).toMatchObject({ kind: 'final', code: 'provider_auth_failed', status });
      expect(err.message).toBe(`provider answered ${status}: the credential was refused`);
    },
  );

  it('keeps no 8 characters of the key, plain or encoded, in any other provider message', async () => {
    const b64 = Buffer.from(`user:${SECRET}`).toString('base64');
    const echoes = [
      SECRET.slice(0, 14),
      SECRET.slice(-9),
      b64,
      encodeURIComponent(SECRET),
      `Bearer ${SECRET}`,
    ];
    stub.answer(400, { error: { message: `bad request from ${echoes.join(' and ')}` } });
    const err = await failure(request());
    expect(err.message).toMatch(/^provider answered 400: bad request from /);
    const secretOnly = b64.slice(8, -4); // the base64 characters made of the key's bytes alone
    for (const text of [SECRET, secretOnly])
      for (let i = 0; i + 8 <= text.length; i++) expect(err.message).not.toContain(text.slice(i, i + 8));
  });

  it('classifies an unreadable 200 as final provider_bad_response', async () => {
    stub.handler = (_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"choices": [');
    expect(await failure(request())).toMatchObject({ kind: 'final', code: 'provider_bad_response' });
    stub.answer(200, { ...completion, usage: undefined });
    expect(await failure(request())).toMatchObject({ kind: 'final', code: 'provider_bad_response' });
    stub.answer(200, { ...completion, choices: [] });
    expect(await failure(request())).toMatchObject({ kind: 'final', code: 'provider_bad_response' });
  });

  it('passes on a plain-text error body', async () => {
    stub.handler = (_req, res) =>
      res.writeHead(503, { 'content-type': 'text/plain' }).end('service overloaded');
    const err = await failure(request());
    expect(err).toMatchObject({ kind: 'retryable', status: 503 });
    expect(err.message).toContain('service overloaded');
  });
});
