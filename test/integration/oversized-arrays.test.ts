import { signupOrg, type SignedUpOrg } from '../support/factories';
import { startTestApp, type TestApp } from '../support/test-app';

/**
 * A body under the size limit can still hold hundreds of thousands of entries. They are refused
 * by count before each is parsed, and a refusal names a few problems, not one per entry (before,
 * 500,000 one-byte messages took 12 s of the event loop and answered 50 MB).
 */
let app: TestApp;
let org: SignedUpOrg;

beforeAll(async () => {
  app = await startTestApp();
  org = await signupOrg(app.http, 'Arrays Inc');
});
afterAll(() => app.close());

const entries = (n: number) => Array<number>(n).fill(1);

it.each([
  ['/v1/llm/invoke', { session_id: 'ses_none', model: 'm', max_tokens: 1, messages: entries(200_000) }],
  ['/v1/chat/completions', { model: 'm', max_tokens: 1, messages: entries(200_000) }],
])('%s refuses 200,000 messages by their count, in a short answer', async (path, body) => {
  const res = await app.http.call<{ error_code: string; details: { path: string }[] }>('POST', path, {
    token: org.adminKey,
    body,
  });
  expect(res.status).toBe(400);
  expect(res.body.details.length).toBeLessThanOrEqual(10);
  expect(res.body.details.map((d) => d.path)).toContain('messages');
  expect(JSON.stringify(res.body).length).toBeLessThan(4_000);
});

it('names at most ten problems of a body that has thousands', async () => {
  const messages = entries(5_000).map(() => ({ role: 'nobody', content: 1 }));
  const res = await app.http.call<{ details: unknown[] }>('POST', '/v1/llm/invoke', {
    token: org.adminKey,
    body: { session_id: 'ses_none', model: 'm', max_tokens: 1, messages },
  });
  expect(res.status).toBe(400);
  expect(res.body.details).toHaveLength(10);
});
