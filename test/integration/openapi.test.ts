import { z } from 'zod';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { toSchema } from '../../api/openapi';
import { ROUTES } from '../../api/routes';
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
});
