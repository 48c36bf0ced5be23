import { startTestApp, type TestApp } from '../support/test-app';

/**
 * The operator's way in over HTTP: GET / and GET /v1 point at the API reference and the OpenAPI
 * document; GET /docs is a page that loads only this origin's files, under a strict CSP.
 */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

const get = (path: string, headers: Record<string, string> = {}, method = 'GET') =>
  fetch(app.http.baseUrl + path, { method, headers });

/** Every src= and href= of a page. */
const referencesOf = (html: string): string[] =>
  [...html.matchAll(/\s(?:src|href)="([^"]*)"/g)].map((m) => m[1] as string);

describe('GET /', () => {
  it('is a page linking the API reference, the OpenAPI document, the approvals page and /health', async () => {
    const res = await get('/', { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('content-security-policy')).toBe(CSP);
    expect(res.headers.get('vary')).toMatch(/accept/i);
    expect(referencesOf(await res.text())).toEqual(
      expect.arrayContaining(['/docs', '/v1/openapi.json', '/approvals', '/health']),
    );
  });

  it('answers JSON with the same links to a client that prefers it', async () => {
    const res = await get('/', { accept: 'application/json' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({
      service: 'control-plane',
      api_version: 'v1',
      docs: '/docs',
      openapi: '/v1/openapi.json',
      approvals: '/approvals',
      health: '/health',
    });
  });

  it('refuses a write with 405 in the error shape, naming GET', async () => {
    const res = await get('/', { accept: 'application/json' }, 'POST');
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
    expect(await res.json()).toMatchObject({
      error_code: 'method_not_allowed',
      request_id: expect.any(String),
    });
  });
});

describe('GET /v1', () => {
  it('names the API version, its OpenAPI document and its reference', async () => {
    const res = await app.http.get('/v1');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ api_version: 'v1', openapi: '/v1/openapi.json', docs: '/docs' });
  });
});

describe('GET /docs', () => {
  it('is an HTML page under a strict CSP, never framed or sniffed', async () => {
    const res = await get('/docs');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('content-security-policy')).toBe(CSP);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('cache-control')).toBe('no-cache');
  });

  it('loads only files of this origin, by absolute path, and has no inline script', async () => {
    const html = await (await get('/docs')).text();
    const refs = referencesOf(html);
    expect(refs).toEqual(
      expect.arrayContaining([
        '/docs/assets/swagger-ui.css',
        '/docs/assets/swagger-ui-bundle.js',
        '/docs/assets/docs.js',
      ]),
    );
    for (const ref of refs) expect(ref).toMatch(/^\/docs\/assets\/[\w.-]+$/);
    expect(html).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
    expect(html).not.toMatch(/\sstyle=|<style/);
  });

  it.each([
    ['/docs/assets/swagger-ui.css', 'text/css; charset=utf-8', 'public, max-age=86400', '.swagger-ui'],
    [
      '/docs/assets/swagger-ui-bundle.js',
      'text/javascript; charset=utf-8',
      'public, max-age=86400',
      'SwaggerUIBundle',
    ],
    ['/docs/assets/docs.js', 'text/javascript; charset=utf-8', 'no-cache', "url: '/v1/openapi.json'"],
    ['/docs/assets/favicon-32x32.png', 'image/png', 'public, max-age=86400', 'PNG'],
  ])('serves %s as %s', async (path, type, cache, marker) => {
    const res = await get(path);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(type);
    expect(res.headers.get('cache-control')).toBe(cache);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await res.text()).toContain(marker);
  });

  it('asks Swagger UI for this service’s document and never for swagger.io’s validator', async () => {
    const script = await (await get('/docs/assets/docs.js')).text();
    expect(script).toContain("url: '/v1/openapi.json'");
    expect(script).toContain('validatorUrl: null');
  });

  it('answers HEAD without a body', async () => {
    const res = await get('/docs', {}, 'HEAD');
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('');
  });

  it('answers 404 in the error shape for any other file, with the same headers', async () => {
    for (const path of ['/docs/assets/swagger-ui.js', '/docs/assets/index.html', '/docs/../package.json']) {
      const res = await get(path);
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ error_code: 'not_found' });
    }
    const res = await get('/docs/assets/nothing.js');
    expect(res.headers.get('content-security-policy')).toBe(CSP);
  });

  it('refuses a write with 405', async () => {
    const res = await get('/docs', {}, 'POST');
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
  });
});
