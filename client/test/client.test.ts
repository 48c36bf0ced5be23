import { startTestApp, type TestApp } from '../../test/support/test-app';
import { signupOrg, type SignedUpOrg } from '../../test/support/factories';
import { collect, ControlPlaneError, createControlPlane, IDEMPOTENT_POSTS, type Key } from '../src';
import { closedPort, recordingFetch, type IsAny } from './support/recording-fetch';

/** Keys, pagination, the typed error and the transport, against the real server. */
describe('control-plane-client: keys, lists, errors, transport', () => {
  let app: TestApp;
  let org: SignedUpOrg;

  beforeAll(async () => {
    app = await startTestApp();
    org = await signupOrg(app.http);
  });
  afterAll(() => app?.close());

  const client = (options: Parameters<typeof createControlPlane>[0] = {}) =>
    createControlPlane({ baseUrl: app.http.baseUrl, apiKey: org.adminKey, ...options });

  it('creates, lists and revokes keys', async () => {
    const cp = client();
    const created = await cp.keys.create({ name: 'ci', scopes: ['audit:read'] });
    const untyped: IsAny<typeof created> = false;
    expect(untyped).toBe(false);
    expect(created.key).toMatch(/^csk_/);
    expect(created.scopes).toEqual(['audit:read']);

    const listed = await collect(cp.keys.list());
    expect(listed.map((k) => k.id)).toContain(created.id);
    expect(listed.find((k) => k.id === created.id)).not.toHaveProperty('key');

    const revoked = await cp.keys.revoke(created.id);
    expect(revoked.revoked_at).not.toBeNull();
    const asIt = createControlPlane({ baseUrl: app.http.baseUrl, apiKey: created.key, retries: 0 });
    await expect(asIt.audit.verify()).rejects.toMatchObject({ status: 401, errorCode: 'invalid_api_key' });
  });

  it('takes a base URL ending in /v1 (as an OpenAI SDK is given it) as the server', async () => {
    for (const suffix of ['/v1', '/v1/', '/'])
      expect((await client({ baseUrl: `${app.http.baseUrl}${suffix}` }).audit.verify()).valid).toBe(true);
  });

  it('walks every page of a list, in order, once each', async () => {
    const own = await signupOrg(app.http, 'Paged');
    const recorder = recordingFetch();
    const cp = client({ apiKey: own.adminKey, fetch: recorder.fetch });
    const minted: Key[] = [];
    for (let i = 0; i < 5; i++) minted.push(await cp.keys.create({ name: `k${i}`, scopes: ['read'] }));

    const seen = await collect(cp.keys.list({ limit: 2 }));

    // Newest first: the five minted in reverse, then the bootstrap key signup made.
    expect(seen.map((k) => k.id)).toEqual([...minted.map((k) => k.id).reverse(), own.adminKeyId]);
    const pages = recorder.to('/v1/keys', 'GET');
    expect(pages).toHaveLength(3);
    expect(pages.map((p) => p.url.searchParams.get('limit'))).toEqual(['2', '2', '2']);
    expect(pages[0]!.url.searchParams.has('cursor')).toBe(false);
    expect(pages[1]!.url.searchParams.get('cursor')).toBeTruthy();
  });

  it('stops fetching pages when the iteration stops', async () => {
    const recorder = recordingFetch();
    const cp = client({ fetch: recorder.fetch });
    for await (const key of cp.paginate('/v1/keys', { limit: 1 })) {
      expect(key.id).toBeTruthy();
      break;
    }
    expect(recorder.to('/v1/keys', 'GET')).toHaveLength(1);
  });

  it('raises a validation_error as ControlPlaneError with status, code, request id and details', async () => {
    const recorder = recordingFetch();
    const cp = client({ fetch: recorder.fetch });
    const error = await cp.keys.create({ name: 'bad', scopes: ['read'], expires_in_days: 0 }).catch((e) => e);

    expect(error).toBeInstanceOf(ControlPlaneError);
    expect(error).toBeInstanceOf(Error);
    expect(error.status).toBe(400);
    expect(error.errorCode).toBe('validation_error');
    const [exchange] = recorder.to('/v1/keys', 'POST');
    expect(error.requestId).toBe(exchange!.responseHeaders!.get('x-request-id'));
    expect(error.details).toEqual(
      expect.arrayContaining([expect.objectContaining({ path: 'expires_in_days' })]),
    );
    expect(error.body.error_code).toBe('validation_error');
    expect(error.message).toBe(error.body.message);
  });

  it('raises not_found (404) with the X-Request-Id', async () => {
    const recorder = recordingFetch();
    const cp = client({ fetch: recorder.fetch });
    const error: ControlPlaneError = await cp.keys
      .get('00000000-0000-4000-8000-000000000000')
      .catch((e) => e);
    expect(error).toMatchObject({ status: 404, errorCode: 'not_found' });
    expect(error.requestId).toBe(recorder.exchanges[0]!.responseHeaders!.get('x-request-id'));
  });

  it('refuses a key no header can carry without putting the key in its message', () => {
    const secret = `${org.adminKey}\n# ci key`;
    const made = () => createControlPlane({ baseUrl: app.http.baseUrl, apiKey: secret });
    expect(made).toThrow(TypeError);
    expect(made).toThrow(/the API key holds a space, a line break or a character outside ASCII/);
    expect(() => made()).not.toThrow(org.adminKey.slice(4));
  });

  it('says where it found no server when nothing answers', async () => {
    const port = await closedPort();
    const baseUrl = `http://127.0.0.1:${port}`;
    const recorder = recordingFetch();
    const cp = createControlPlane({ baseUrl, apiKey: org.adminKey, retries: 1, fetch: recorder.fetch });

    const error: ControlPlaneError = await collect(cp.keys.list()).catch((e) => e);

    expect(error).toBeInstanceOf(ControlPlaneError);
    expect(error.status).toBe(0);
    expect(error.errorCode).toBe('network_error');
    expect(error.message).toContain(`is the server at ${baseUrl} running`);
    expect(error.message).toContain('ECONNREFUSED');
    expect(recorder.exchanges).toHaveLength(2); // a GET is retried
  });

  it('retries a 429 after its Retry-After', async () => {
    let refused = 0;
    const recorder = recordingFetch({
      before: (request) => {
        if (new URL(request.url).pathname !== '/v1/audit/verify' || refused++) return undefined;
        return Response.json(
          { error_code: 'rate_limited', message: 'slow down', request_id: 'r1' },
          { status: 429, headers: { 'Retry-After': '0' } },
        );
      },
    });
    const verified = await client({ fetch: recorder.fetch }).audit.verify();
    expect(verified.valid).toBe(true);
    expect(recorder.to('/v1/audit/verify')).toHaveLength(2);
  });

  it('gives up on a 429 after its retries, as ControlPlaneError', async () => {
    const recorder = recordingFetch({
      before: () =>
        Response.json(
          { error_code: 'rate_limited', message: 'slow down', request_id: 'r2', retry_after_seconds: 0 },
          { status: 429, headers: { 'Retry-After': '0' } },
        ),
    });
    const error = await client({ fetch: recorder.fetch, retries: 2 })
      .audit.verify()
      .catch((e) => e);
    expect(error).toMatchObject({ status: 429, errorCode: 'rate_limited', requestId: 'r2' });
    expect(error.body.retry_after_seconds).toBe(0);
    expect(recorder.exchanges).toHaveLength(3);
  });

  it('creates a key once when the answer to its POST is lost: the retry reuses the Idempotency-Key', async () => {
    const own = await signupOrg(app.http, 'Retried');
    let dropped = 0;
    const recorder = recordingFetch({
      after: (request) =>
        request.method === 'POST' && !dropped++ ? new TypeError('fetch failed (answer dropped)') : undefined,
    });
    const cp = client({ apiKey: own.adminKey, fetch: recorder.fetch });

    const key = await cp.keys.create({ name: 'once', scopes: ['read'] });

    const posts = recorder.to('/v1/keys', 'POST');
    expect(posts).toHaveLength(2);
    const [first, second] = posts.map((p) => p.requestHeaders.get('idempotency-key'));
    expect(first).toMatch(/^[0-9a-f-]{36}$/);
    expect(second).toBe(first);
    expect(posts[1]!.responseHeaders!.get('idempotent-replayed')).toBe('true');
    const named = (await collect(cp.keys.list())).filter((k) => k.name === 'once');
    expect(named.map((k) => k.id)).toEqual([key.id]);
  });

  it('does not resend a POST without an Idempotency-Key when its answer is lost', async () => {
    const recorder = recordingFetch({
      after: (request) => (request.method === 'POST' ? new TypeError('fetch failed') : undefined),
    });
    const cp = client({ fetch: recorder.fetch });
    const error = await cp.approvals
      .approve('00000000-0000-4000-8000-000000000000')
      .catch((e: ControlPlaneError) => e);
    expect(error).toMatchObject({ status: 0, errorCode: 'network_error' });
    expect(recorder.exchanges).toHaveLength(1);
    expect(IDEMPOTENT_POSTS.has('/v1/approvals/{id}/approve')).toBe(false);
  });
});
