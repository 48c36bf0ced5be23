import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startTestApp, type TestApp } from '../../test/support/test-app';
import { GENERATE_COMMAND, GENERATED, generateTypes } from '../scripts/generate-types';

const TSC = path.resolve(__dirname, '..', '..', 'node_modules', '.bin', 'tsc');

/**
 * The client's types are generated from the OpenAPI document the running server serves: a route
 * changed without regenerating them, or a document openapi-typescript turns into TypeScript that
 * does not compile, fails here instead of in a user's build.
 */
describe('types generated from GET /v1/openapi.json', () => {
  let app: TestApp;
  let dir: string;
  let generated: string;

  beforeAll(async () => {
    app = await startTestApp();
    dir = mkdtempSync(path.join(tmpdir(), 'cp-openapi-test-'));
    const served = await fetch(`${app.http.baseUrl}/v1/openapi.json`);
    expect(served.status).toBe(200);
    const document = path.join(dir, 'openapi.json');
    writeFileSync(document, await served.text());
    generated = path.join(dir, 'openapi.ts');
    generateTypes(document, generated);
  }, 60_000);

  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await app?.close();
  });

  it('equal the committed client/src/openapi.ts', () => {
    const committed = readFileSync(GENERATED, 'utf8');
    const fresh = readFileSync(generated, 'utf8');
    if (fresh !== committed)
      throw new Error(
        `client/src/openapi.ts is not what the served OpenAPI document generates: run \`${GENERATE_COMMAND}\` and commit the result`,
      );
    expect(fresh).toContain("'/v1/llm/invoke': {");
  });

  it('compile with tsc', () => {
    const args = ['--noEmit', '--strict', '--target', 'ES2022', '--module', 'node16', generated];
    let problems = '';
    try {
      execFileSync(TSC, args, { encoding: 'utf8', stdio: 'pipe' });
    } catch (error) {
      // tsc reports on stdout; the thrown message alone says only that it exited non-zero.
      const { stdout, message } = error as { stdout?: string; message: string };
      problems = stdout || message;
    }
    expect(problems).toBe('');
  }, 60_000);
});
