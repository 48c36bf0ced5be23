import { ProviderError, type CompletionRequest } from '../../../domain/providers';
import { ProviderRouter } from '../../../infra/providers/provider-router';
import { StubProvider } from '../../support/stub-provider';

const SECRET = 'sk-ant-api03-SECRETSECRETSECRET';
let stub: StubProvider;
const router = new ProviderRouter({ allowPrivateHosts: true });

beforeAll(async () => (stub = await new StubProvider().start()));
afterAll(async () => {
  await stub.stop();
  await router.close();
});
beforeEach(() => stub.requests.splice(0));

const request = (over: Partial<CompletionRequest> = {}): CompletionRequest => ({
  provider: 'anthropic',
  baseUrl: stub.url,
  secret: SECRET,
  model: 'claude-haiku-4-5',
  messages: [
    { role: 'system', content: 'be brief' },
    { role: 'system', content: 'be kind' },
    { role: 'user', content: 'hello' },
    { role: 'assistant', content: 'hi' },
    { role: 'user', content: 'how are you?' },
  ],
  maxTokens: 64,
  timeoutMs: 2_000,
  ...over,
});

const message = {
  id: 'msg_1',
  type: 'message',
  role: 'assistant',
  model: 'claude-haiku-4-5-20251001',
  content: [
    { type: 'text', text: 'Fine, ' },
    { type: 'text', text: 'thanks.' },
  ],
  stop_reason: 'end_turn',
  usage: { input_tokens: 21, output_tokens: 4 },
};

const failure = (req: CompletionRequest) =>
  router.complete(req).then(
    () => {
      throw new Error('expected a ProviderError');
    },
    (e: unknown) => e as ProviderError,
  );

describe('anthropic (Messages)', () => {
  it('lifts system messages into `system`, sends the version header, maps text and usage', async () => {
    stub.answer(200, message);
    const result = await router.complete(request({ temperature: 0 }));
    expect(result).toEqual({
      output: { role: 'assistant', content: 'Fine, thanks.' },
      usage: { inputTokens: 21, outputTokens: 4 },
      model: 'claude-haiku-4-5-20251001',
      finishReason: 'stop',
    });
    const [sent] = stub.requests;
    expect(sent?.path).toBe('/v1/messages');
    expect(sent?.headers['x-api-key']).toBe(SECRET);
    expect(sent?.headers['anthropic-version']).toBe('2023-06-01');
    expect(sent?.headers.authorization).toBeUndefined();
    expect(sent?.body).toEqual({
      model: 'claude-haiku-4-5',
      max_tokens: 64,
      system: 'be brief\n\nbe kind',
      temperature: 0,
      messages: [
        { role: 'user', content: 'hello' },
        { role: 'assistant', content: 'hi' },
        { role: 'user', content: 'how are you?' },
      ],
    });
  });

  it('classifies 529 (overloaded) and 429 as retryable, 400 as final with its message', async () => {
    stub.answer(529, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
    expect(await failure(request())).toMatchObject({
      kind: 'retryable',
      code: 'provider_unavailable',
      status: 529,
    });
    stub.answer(429, { type: 'error', error: { message: 'slow down' } }, { 'retry-after': '3' });
    expect(await failure(request())).toMatchObject({ kind: 'retryable', retryAfterSeconds: 3 });
    stub.answer(400, {
      type: 'error',
      error: { type: 'invalid_request_error', message: 'max_tokens: too big' },
    });
    const err = await failure(request());
    expect(err).toMatchObject({ kind: 'final', code: 'provider_rejected' });
    expect(err.message).toContain('max_tokens: too big');
  });

  it('scrubs the key from an echoed authentication error', async () => {
    stub.answer(401, { type: 'error', error: { message: `invalid x-api-key ${SECRET}` } });
    const err = await failure(request());
    expect(err).toMatchObject({ kind: 'final', code: 'provider_auth_failed' });
    expect(err.message).not.toContain(SECRET);
  });

  it('refuses an answer without usage', async () => {
    stub.answer(200, { ...message, usage: {} });
    expect(await failure(request())).toMatchObject({ kind: 'final', code: 'provider_bad_response' });
  });
});
