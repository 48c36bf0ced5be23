import OpenAI, { APIError } from 'openai';
import { mintKey } from '../support/factories';
import { eventually, openSession, setUpInvoking, type InvokeSetup } from '../support/invoke-fixtures';
import { requireApproval } from '../support/approval-fixtures';
import { caught, openaiClient } from '../support/openai-sdk';
import { startTestApp, type TestApp } from '../support/test-app';

/**
 * What the OpenAI SDKs read from an error on the OpenAI-compatible paths: OpenAI's error object
 * (404 and 405 included), and `x-should-retry: false` on every answer sending the request again
 * cannot change, so an SDK does not submit it anew.
 */
let app: TestApp;
let setup: InvokeSetup;
let agentKey: string;

type OpenAiErrorBody = {
  error: { message: string; type: string; code: string; param: string | null };
  error_code: string;
  request_id: string;
};

const clientFor = (sessionId?: string) =>
  openaiClient(app.http.baseUrl, agentKey, sessionId ? { 'X-Session-Id': sessionId } : {});

const session = (body: Record<string, unknown> = {}) =>
  openSession(app.http, setup.org.adminKey, { agent_id: setup.agentId, max_cost_usd: 1, ...body });

const ask = (client: OpenAI, model = 'mock-1', stream = false) =>
  client.chat.completions.create({
    model,
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 8,
    ...(stream ? { stream: true } : {}),
  });

const resumedBody = {
  model: 'mock-1',
  messages: [{ role: 'user' as const, content: 'hi' }],
  max_tokens: 8,
  stream: false as const,
};

beforeAll(async () => {
  app = await startTestApp({ workers: true, env: { CP_MAX_WAIT_SECONDS: '1' } });
  setup = await setUpInvoking(app.http, { models: ['mock-1', 'gated-1', 'mock-error-400'] });
  agentKey = (await mintKey(app.http, setup.org.adminKey, ['invoke'])).key;
}, 60_000);
afterAll(() => app.close());

describe('404 and 405 on the OpenAI-compatible paths', () => {
  it('answers GET /v1/chat/completions 405 with an OpenAI error the SDK shows, and Allow: POST', async () => {
    const err = await caught(clientFor().get('/chat/completions'));
    expect(err).toMatchObject({ status: 405, code: 'method_not_allowed', type: 'api_error', param: null });
    expect(err.message).toContain('GET is not allowed on /v1/chat/completions; use POST');
    expect(err.headers?.get('allow')).toBe('POST');
  });

  it('answers POST /v1/models 405 OpenAI-shaped, with the contract fields beside it', async () => {
    const res = await app.http.post<OpenAiErrorBody>('/v1/models', {}, agentKey);
    expect(res.status).toBe(405);
    expect(res.body.error).toMatchObject({ code: 'method_not_allowed', param: null });
    expect(res.body.error.message).toContain('use GET');
    expect(res.body).toMatchObject({ error_code: 'method_not_allowed', request_id: expect.any(String) });
  });

  it("answers an unknown path under /v1/chat/completions (the SDK's retrieve) 404 OpenAI-shaped", async () => {
    const err = await caught(clientFor().chat.completions.retrieve('inv_nope'));
    expect(err).toMatchObject({ status: 404, code: 'not_found', type: 'invalid_request_error' });
    expect(err.message).toContain('no route GET /v1/chat/completions/inv_nope');
  });

  it("keeps the contract's error shape on the other paths", async () => {
    const res = await app.http.get<Record<string, unknown>>('/v1/no-such-thing', agentKey);
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ error_code: 'not_found' });
    expect(res.body.error).toBeUndefined();
  });
});

describe('x-should-retry: false on the answers a retry cannot change', () => {
  const noRetry = (err: APIError) => expect(err.headers?.get('x-should-retry')).toBe('false');

  it('400 validation_error without X-Session-Id', async () => {
    const err = await caught(ask(clientFor()));
    expect(err).toMatchObject({ status: 400, code: 'validation_error', param: 'X-Session-Id' });
    noRetry(err);
  });

  it("400 validation_error resuming with X-Session-Id naming another session than the invocation's", async () => {
    const first = await session();
    const done = (await ask(clientFor(first.id))) as OpenAI.ChatCompletion;
    const other = await session();
    const resume = { headers: { 'X-Invocation-Id': done.id } };
    const err = await caught(clientFor(other.id).chat.completions.create(resumedBody, resume));
    expect(err).toMatchObject({ status: 400, code: 'validation_error', param: 'X-Session-Id' });
    expect(err.message).toContain(`invocation ${done.id} is in session ${first.id}, not ${other.id}`);
    noRetry(err);
    const streamed = clientFor(other.id).chat.completions.create({ ...resumedBody, stream: true }, resume);
    expect(await caught(streamed)).toMatchObject({ status: 400, param: 'X-Session-Id' });
    const malformed = { headers: { ...resume.headers, 'X-Session-Id': 'not an id' } };
    expect(await caught(clientFor().chat.completions.create(resumedBody, malformed))).toMatchObject({
      status: 400,
      param: 'X-Session-Id',
    });
    // Its own session, or none at all, resumes it.
    expect((await clientFor(first.id).chat.completions.create(resumedBody, resume)).id).toBe(done.id);
    expect((await clientFor().chat.completions.create(resumedBody, resume)).id).toBe(done.id);
  });

  it('400 unpriced_model', async () => {
    const agentless = await openSession(app.http, setup.org.adminKey, { max_cost_usd: 1 });
    const err = await caught(ask(clientFor(agentless.id), 'mock-unpriced-1'));
    expect(err).toMatchObject({ status: 400, code: 'unpriced_model' });
    noRetry(err);
  });

  it('402 budget_exceeded, found when the request is admitted', async () => {
    const capped = await session({ max_calls: 1 });
    await ask(clientFor(capped.id));
    const err = await caught(ask(clientFor(capped.id)));
    expect(err).toMatchObject({ status: 402, code: 'budget_exceeded' });
    noRetry(err);
  });

  it('403 from the guardian', async () => {
    const err = await caught(ask(clientFor((await session()).id), 'gpt-4o'));
    expect(err).toMatchObject({ status: 403, code: 'model_not_allowed' });
    noRetry(err);
  });

  it('404 for a session the org does not have', async () => {
    const err = await caught(ask(clientFor('ses_nope')));
    expect(err).toMatchObject({ status: 404, code: 'not_found' });
    noRetry(err);
  });

  it('409 session_not_open, streamed or not', async () => {
    const closed = await session();
    const close = await app.http.post(`/v1/sessions/${closed.id}/close`, {}, setup.org.adminKey);
    expect(close.status).toBe(200);
    for (const stream of [false, true]) {
      const err = await caught(ask(clientFor(closed.id), 'mock-1', stream));
      expect(err).toMatchObject({ status: 409, code: 'session_not_open' });
      noRetry(err);
    }
    // The contract's fields stay beside OpenAI's error object.
    const res = await app.http.call<OpenAiErrorBody>('POST', '/v1/chat/completions', {
      token: agentKey,
      headers: { 'X-Session-Id': closed.id },
      body: { model: 'mock-1', messages: [{ role: 'user', content: 'hi' }], max_tokens: 8 },
    });
    expect(res.body).toMatchObject({
      error: { code: 'session_not_open', type: 'invalid_request_error', param: null },
      error_code: 'session_not_open',
      session_id: closed.id,
      status: 'closed',
      request_id: res.headers.get('x-request-id'),
    });
  });

  it('409 approval_pending', async () => {
    await requireApproval(app.http, setup.org.adminKey, { model: 'gated-1' });
    const err = await caught(ask(clientFor((await session()).id), 'gated-1'));
    expect(err).toMatchObject({ status: 409, code: 'approval_pending' });
    noRetry(err);
  });

  it('402 budget_exceeded when an approved call no longer fits, with the fields admission gives (QA)', async () => {
    await requireApproval(app.http, setup.org.adminKey, { model: 'gated-1' });
    const capped = await session({ max_calls: 1 });
    const call = (headers: Record<string, string> = {}) =>
      app.http.call<OpenAiErrorBody & Record<string, unknown>>('POST', '/v1/chat/completions', {
        token: agentKey,
        headers: { 'X-Session-Id': capped.id, ...headers },
        body: { model: 'gated-1', messages: [{ role: 'user', content: 'hi' }], max_tokens: 8 },
      });
    const held = await call();
    expect(held.body.error_code).toBe('approval_pending');
    const invocationId = held.headers.get('x-invocation-id') as string;
    // The session's one call is spent meanwhile; the approved call is refused when it reserves.
    await ask(clientFor(capped.id));
    const voted = await app.http.post(
      `/v1/approvals/${held.body.error.param}/approve`,
      {},
      setup.org.adminKey,
    );
    expect(voted.status).toBe(200);
    const refused = await eventually(async () => {
      const res = await call({ 'X-Invocation-Id': invocationId });
      return res.status === 402 ? res : null;
    });
    expect(refused.body).toMatchObject({
      error: { code: 'budget_exceeded' },
      error_code: 'budget_exceeded',
      session_id: capped.id,
      cap: 'calls',
      limit: 1,
      remaining: 0,
      needed: 1,
      invocation_id: invocationId,
    });
  });

  it('401 invalid_api_key, not 502, for a call whose key was revoked while it waited (QA)', async () => {
    await requireApproval(app.http, setup.org.adminKey, { model: 'gated-1' });
    const doomed = await mintKey(app.http, setup.org.adminKey, ['invoke'], 'revoked while held');
    const s = await session();
    const call = (token: string, headers: Record<string, string> = {}) =>
      app.http.call<OpenAiErrorBody>('POST', '/v1/chat/completions', {
        token,
        headers: { 'X-Session-Id': s.id, ...headers },
        body: { model: 'gated-1', messages: [{ role: 'user', content: 'hi' }], max_tokens: 8 },
      });
    const held = await call(doomed.key);
    expect(held.body.error_code).toBe('approval_pending');
    expect((await app.http.delete(`/v1/keys/${doomed.id}`, setup.org.adminKey)).status).toBe(200);
    // Its approval is withdrawn at once: the invocation failed, and no provider call was made.
    const resumed = await call(setup.org.adminKey, {
      'X-Invocation-Id': held.headers.get('x-invocation-id') as string,
    });
    expect(resumed.status).toBe(401);
    expect(resumed.body).toMatchObject({
      error: { code: 'invalid_api_key', type: 'authentication_error' },
      error_code: 'invalid_api_key',
    });
    expect(resumed.headers.get('x-should-retry')).toBe('false');
  });

  it('400 credential_not_found, not 502, for a call whose credential was deleted (QA)', async () => {
    const stored = await app.http.post<{ credential_ref: string }>(
      '/v1/credentials',
      { name: 'soon gone', provider: 'mock', secret: 'mock-secret-gone' },
      setup.org.adminKey,
    );
    const ref = stored.body.credential_ref;
    expect((await app.http.delete(`/v1/credentials/${ref}`, setup.org.adminKey)).status).toBe(204);
    const res = await app.http.call<OpenAiErrorBody>('POST', '/v1/chat/completions', {
      token: agentKey,
      headers: { 'X-Session-Id': (await session()).id, 'X-Credential-Ref': ref },
      body: { model: 'mock-1', messages: [{ role: 'user', content: 'hi' }], max_tokens: 8 },
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      error: { code: 'credential_not_found', type: 'invalid_request_error' },
      error_code: 'credential_not_found',
    });
    expect(res.body.error.message).toContain(`credential ${ref} was deleted`);
    expect(res.headers.get('x-should-retry')).toBe('false');
  });

  it('502 when the provider failed', async () => {
    const err = await caught(ask(clientFor((await session()).id), 'mock-error-400'));
    expect(err).toMatchObject({ status: 502, code: 'provider_rejected' });
    noRetry(err);
  });

  it('every refusal carries the request id, as the contract has every error do', async () => {
    const res = await app.http.call<OpenAiErrorBody>('POST', '/v1/chat/completions', {
      token: agentKey,
      headers: { 'X-Session-Id': (await session()).id },
      body: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], max_tokens: 8 },
    });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({
      error_code: 'model_not_allowed',
      request_id: res.headers.get('x-request-id'),
      invocation_id: res.headers.get('x-invocation-id'),
    });
  });
});
