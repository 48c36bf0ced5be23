import { z } from 'zod';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { toSchema } from '../../api/openapi';
import { ROUTES } from '../../api/routes';
import { signupOrg } from '../support/factories';
import { startTestApp, type TestApp } from '../support/test-app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

type Doc = {
  openapi: string;
  paths: Record<
    string,
    Record<
      string,
      { requestBody?: { content: Record<string, { schema: unknown }> }; 'x-required-scope'?: string }
    >
  >;
};

type Response = { description: string; content?: Record<string, { schema: unknown }> };
type Operation = {
  parameters?: { name: string; in: string; required?: boolean; description?: string; schema?: unknown }[];
  responses: Record<string, Response>;
};
type LooseDoc = {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown> };
};

const OPENAI_ERROR = '#/components/schemas/OpenAIError';
const CONTRACT_ERROR = '#/components/schemas/Error';

const operationOf = (doc: LooseDoc, route: (typeof ROUTES)[number]): Operation =>
  doc.paths[route.path]?.[route.method.toLowerCase()] as Operation;

const schemaRef = (response: Response): unknown =>
  (response.content?.['application/json']?.schema as { $ref?: string } | undefined)?.$ref;

describe('GET /v1/openapi.json', () => {
  it('is an OpenAPI 3.1 document served without a token', async () => {
    const res = await app.http.get<Doc>('/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
  });

  it('describes every route of the route table, with its scope', async () => {
    const { body } = await app.http.get<Doc>('/v1/openapi.json');
    for (const route of ROUTES) {
      const op = body.paths[route.path]?.[route.method.toLowerCase()];
      expect(op).toBeDefined();
      if (route.access.kind === 'scope') expect(op?.['x-required-scope']).toBe(route.access.scopes[0]);
    }
    const documented = Object.values(body.paths).reduce((n, methods) => n + Object.keys(methods).length, 0);
    expect(documented).toBe(ROUTES.length);
  });

  it('documents request bodies from the very schemas that validate them', async () => {
    const { body } = await app.http.get<Doc>('/v1/openapi.json');
    for (const route of ROUTES.filter((r) => r.body)) {
      const schema =
        body.paths[route.path]?.[route.method.toLowerCase()]?.requestBody?.content['application/json']
          ?.schema;
      expect(schema).toEqual(toSchema(route.body as z.ZodType, 'input', {}));
    }
  });

  it('is a valid OpenAPI 3.1 document in which every $ref resolves (a maintained validator says so)', async () => {
    const { body } = await app.http.get<Doc>('/v1/openapi.json');
    const script = join(__dirname, '../support/validate-openapi.mjs');
    const verdict = execFileSync(process.execPath, [script], { input: JSON.stringify(body) }).toString();
    expect(JSON.parse(verdict)).toEqual({ valid: true });
    const refs = [...JSON.stringify(body).matchAll(/"\$ref":"([^"]+)"/g)].map((m) => m[1] as string);
    expect(refs.length).toBeGreaterThan(0);
    const components = (body as unknown as { components: { schemas: Record<string, unknown> } }).components
      .schemas;
    for (const ref of new Set(refs)) {
      expect(ref.startsWith('#/components/schemas/')).toBe(true);
      expect(components[ref.slice('#/components/schemas/'.length)]).toBeDefined();
    }
  });

  it('names its server, its license, a 500 on every operation, and no schema that takes anything (QA: redocly lint)', async () => {
    const { body } = await app.http.get<LooseDoc & { servers?: unknown; info: { license?: unknown } }>(
      '/v1/openapi.json',
    );
    expect(body.servers).toEqual([expect.objectContaining({ url: '/' })]);
    expect(body.info.license).toEqual({ name: 'Apache-2.0', identifier: 'Apache-2.0' });
    for (const route of ROUTES)
      expect([route.path, operationOf(body, route).responses['500']?.description]).toEqual([
        route.path,
        expect.stringContaining('internal_error'),
      ]);
    // An empty schema inside anyOf matches anything.
    expect(JSON.stringify(body)).not.toContain('"anyOf":[{}');
    const chatConflict = operationOf(
      body,
      ROUTES.find((r) => r.path === '/v1/chat/completions')!,
    );
    expect(Object.keys((chatConflict.responses['409'] as { headers?: object }).headers ?? {})).toEqual(
      expect.arrayContaining(['X-Invocation-Id', 'X-Cost-Usd']),
    );
    const openAi = body.components.schemas.OpenAIError as { properties: Record<string, unknown> };
    expect(Object.keys(openAi.properties)).toContain('credential_ref');
  });

  it('points the error responses of the OpenAI-compatible routes at the OpenAIError schema', async () => {
    const { body } = await app.http.get<LooseDoc>('/v1/openapi.json');
    const openAi = body.components.schemas.OpenAIError as { properties: Record<string, unknown> };
    expect(Object.keys(openAi.properties)).toEqual(
      expect.arrayContaining(['error', 'error_code', 'message', 'request_id', 'invocation_id']),
    );
    expect(openAi.properties.error).toMatchObject({
      required: ['message', 'type', 'code', 'param'],
    });
    for (const route of ROUTES) {
      const expected = route.errorShape === 'openai' ? OPENAI_ERROR : CONTRACT_ERROR;
      for (const [status, response] of Object.entries(operationOf(body, route).responses))
        if (Number(status) >= 400)
          expect([route.path, status, schemaRef(response)]).toEqual([route.path, status, expected]);
    }
  });

  it('documents the request headers a route reads: X-Session-Id, X-Credential-Ref and X-Invocation-Id', async () => {
    const { body } = await app.http.get<LooseDoc>('/v1/openapi.json');
    const headersOf = (path: string, method: string) =>
      Object.fromEntries(
        (body.paths[path]?.[method]?.parameters ?? [])
          .filter((p) => p.in === 'header')
          .map((p) => [p.name, p]),
      );
    const chat = headersOf('/v1/chat/completions', 'post');
    expect(Object.keys(chat).sort()).toEqual(['X-Credential-Ref', 'X-Invocation-Id', 'X-Session-Id']);
    expect(chat['X-Session-Id']).toMatchObject({ required: false, schema: { type: 'string' } });
    expect(chat['X-Session-Id']?.description).toMatch(/required unless X-Invocation-Id/);
    for (const path of ['/v1/models', '/v1/models/{id}'])
      expect(Object.keys(headersOf(path, 'get'))).toEqual(['X-Session-Id']);
  });

  it('documents the 200 of chat completions as JSON and, with stream: true, as text/event-stream', async () => {
    const { body } = await app.http.get<LooseDoc>('/v1/openapi.json');
    const ok = body.paths['/v1/chat/completions']?.post?.responses['200'];
    expect(Object.keys(ok?.content ?? {}).sort()).toEqual(['application/json', 'text/event-stream']);
    expect(ok?.content?.['text/event-stream']?.schema).toMatchObject({ type: 'string' });
  });

  it("keeps a route's own 401/403/429/503 description and adds the generic one", async () => {
    const { body } = await app.http.get<LooseDoc>('/v1/openapi.json');
    const forbidden = body.paths['/v1/chat/completions']?.post?.responses['403']?.description;
    expect(forbidden).toContain('the guardian denied it');
    expect(forbidden).toContain('insufficient_scope: requires llm:invoke');
  });

  it('documents 413 payload_too_large and 415 unsupported_media_type on every route with a body', async () => {
    const { body } = await app.http.get<LooseDoc>('/v1/openapi.json');
    for (const route of ROUTES.filter((r) => r.body)) {
      const { responses } = operationOf(body, route);
      expect([route.path, responses['413']?.description]).toEqual([
        route.path,
        expect.stringContaining('payload_too_large'),
      ]);
      expect([route.path, responses['415']?.description]).toEqual([
        route.path,
        expect.stringContaining('unsupported_media_type'),
      ]);
    }
  });

  it('documents 400, 413 and 415 on every other route but GET: a body, if sent, is read', async () => {
    const { body } = await app.http.get<LooseDoc>('/v1/openapi.json');
    for (const route of ROUTES.filter((r) => !r.body && r.method !== 'GET')) {
      const { responses } = operationOf(body, route);
      const described = [400, 413, 415].map((status) => responses[String(status)]?.description ?? null);
      expect([route.method, route.path, described]).toEqual([
        route.method,
        route.path,
        [expect.stringContaining('invalid_json'), expect.any(String), expect.any(String)],
      ]);
    }
    // And the service does answer them so.
    const org = await signupOrg(app.http);
    const close = `/v1/sessions/ses_none/close`;
    const notJson = await app.http.call('POST', close, {
      token: org.adminKey,
      rawBody: '{nope',
      headers: { 'content-type': 'application/json' },
    });
    expect([notJson.status, notJson.body.error_code]).toEqual([400, 'invalid_json']);
    const asText = await app.http.call('POST', close, {
      token: org.adminKey,
      rawBody: 'hi',
      headers: { 'content-type': 'text/plain' },
    });
    expect([asText.status, asText.body.error_code]).toEqual([415, 'unsupported_media_type']);
  });

  it('documents 400 on every route with an id in its path', async () => {
    const { body } = await app.http.get<LooseDoc>('/v1/openapi.json');
    for (const route of ROUTES.filter((r) => r.path.includes('{'))) {
      const { responses } = operationOf(body, route);
      expect([route.method, route.path, responses['400']?.description]).toEqual([
        route.method,
        route.path,
        expect.stringContaining('validation_error'),
      ]);
    }
  });

  it('documents 409 idempotency_conflict on every route that reads Idempotency-Key', async () => {
    const { body } = await app.http.get<LooseDoc>('/v1/openapi.json');
    const idempotent = ROUTES.filter((r) => r.idempotent);
    expect(idempotent.map((r) => r.path)).toEqual(expect.arrayContaining(['/v1/keys', '/v1/llm/invoke']));
    for (const route of idempotent) {
      const { responses, parameters } = operationOf(body, route);
      expect(parameters?.some((p) => p.name === 'Idempotency-Key')).toBe(true);
      expect([route.path, responses['409']?.description]).toEqual([
        route.path,
        expect.stringContaining('idempotency_conflict'),
      ]);
    }
  });

  it('documents response headers: X-Request-Id on every answer, Location, the chat headers, Retry-After', async () => {
    const { body } = await app.http.get<{
      paths: Record<
        string,
        Record<string, { responses: Record<string, { headers?: Record<string, unknown> }> }>
      >;
    }>('/v1/openapi.json');
    for (const [path, methods] of Object.entries(body.paths))
      for (const [method, op] of Object.entries(methods))
        for (const [status, response] of Object.entries(op.responses))
          expect([path, method, status, Object.keys(response.headers ?? {})]).toEqual([
            path,
            method,
            status,
            expect.arrayContaining(['X-Request-Id']),
          ]);
    const invoke = body.paths['/v1/llm/invoke']?.post?.responses ?? {};
    expect(Object.keys(invoke['202']?.headers ?? {})).toEqual(
      expect.arrayContaining(['Location', 'Idempotent-Replayed', 'RateLimit-Remaining']),
    );
    expect(Object.keys(invoke['429']?.headers ?? {})).toContain('Retry-After');
    const chat = body.paths['/v1/chat/completions']?.post?.responses['200']?.headers ?? {};
    expect(Object.keys(chat)).toEqual(expect.arrayContaining(['X-Invocation-Id', 'X-Cost-Usd']));
  });

  it('documents the 400 and 404 GET /v1/models answers for its X-Session-Id', async () => {
    const { body } = await app.http.get<LooseDoc>('/v1/openapi.json');
    const { responses } = body.paths['/v1/models']?.get as Operation;
    expect(responses['400']?.description).toContain('X-Session-Id');
    expect(responses['404']?.description).toContain('X-Session-Id');
  });

  it('documents the Prefer: wait=N header of the routes that wait', async () => {
    const { body } = await app.http.get<LooseDoc>('/v1/openapi.json');
    for (const [path, method] of [
      ['/v1/llm/invoke', 'post'],
      ['/v1/llm/invocations/{id}', 'get'],
    ] as const) {
      const prefer = (body.paths[path]?.[method]?.parameters ?? []).find((p) => p.name === 'Prefer');
      expect(prefer).toMatchObject({ in: 'header', required: false });
      expect(prefer?.description).toContain('wait=N');
    }
  });

  it('documents the 400 POST /v1/auth/logout answers an API key with', async () => {
    const { body } = await app.http.get<LooseDoc>('/v1/openapi.json');
    const refused = body.paths['/v1/auth/logout']?.post?.responses['400'];
    expect(refused?.description).toContain('validation_error');
    expect(schemaRef(refused as Response)).toBe(CONTRACT_ERROR);
  });

  it('states when X-Request-Id is echoed and when the service makes one', async () => {
    const { body } = await app.http.get<{ info: { description: string } }>('/v1/openapi.json');
    expect(body.info.description).toContain(
      'X-Request-Id: the one the client sent, echoed when it is 1 to 128 visible ASCII characters (0x21-0x7E)',
    );
  });

  it('describes GET /v1/approvals as newest first', async () => {
    const { body } = await app.http.get<{ paths: Record<string, Record<string, { summary: string }>> }>(
      '/v1/openapi.json',
    );
    expect(body.paths['/v1/approvals']?.get?.summary).toContain('newest first');
  });

  it('documents the AGBOM under the CycloneDX media type it is served with', async () => {
    const { body } = await app.http.get<LooseDoc>('/v1/openapi.json');
    const content = body.paths['/v1/agents/{id}/agbom']?.get?.responses['200']?.content ?? {};
    expect(Object.keys(content)).toEqual(['application/vnd.cyclonedx+json; version=1.6']);
  });

  it("documents an invocation's output.tool_calls", async () => {
    const { body } = await app.http.get<LooseDoc>('/v1/openapi.json');
    const invocation = body.components.schemas.Invocation as {
      properties: { output: { anyOf: { properties?: Record<string, unknown> }[] } };
    };
    const output = invocation.properties.output.anyOf.find((s) => s.properties);
    expect(output?.properties?.tool_calls).toMatchObject({
      type: 'array',
      items: {
        properties: {
          type: { const: 'function' },
          function: { properties: { name: { type: 'string' }, arguments: { type: 'string' } } },
        },
      },
    });
  });
});
