import { startTestApp, type TestApp } from '../../test/support/test-app';
import { signupOrg, type SignedUpOrg } from '../../test/support/factories';
import { cliRunner } from './support/cli-run';
import { closedPort, recordingFetch } from './support/recording-fetch';

/** The CLI's keys, credentials and agents commands, and its usage and transport exit codes. */
describe('control-plane CLI: keys, credentials, agents, exit codes', () => {
  let app: TestApp;
  let org: SignedUpOrg;
  let cli: ReturnType<typeof cliRunner>;

  beforeAll(async () => {
    app = await startTestApp();
    org = await signupOrg(app.http);
    cli = cliRunner({ baseUrl: app.http.baseUrl, apiKey: org.adminKey });
  });
  afterAll(() => app?.close());

  it('prints help with the exit codes and the environment, exit 0', async () => {
    const { code, stdout } = await cli(['--help']);
    expect(code).toBe(0);
    expect(stdout).toContain('Usage: control-plane');
    expect(stdout).toMatch(/^ {2}4 {2}the invocation did not succeed/m);
    expect(stdout).toContain('CP_API_KEY');
  });

  it('creates a key (its secret once), lists it and revokes it, in tables', async () => {
    const created = await cli(['keys', 'create', '--name', 'ci-bot', '--scopes', 'audit:read,stats:read']);
    expect(created.code).toBe(0);
    const secret = /csk_\S+/.exec(created.stdout)?.[0];
    expect(secret).toBeDefined();
    expect(created.stdout).toContain('audit:read, stats:read');
    expect(created.stdout).toContain('shown this once');
    const id = /key_\S+/.exec(created.stdout)![0];

    const listed = await cli(['keys', 'list']);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(id);
    expect(listed.stdout).toContain('ci-bot');
    expect(listed.stdout).not.toContain(secret);

    const revoked = await cli(['keys', 'revoke', id]);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toMatch(/revoked_at\s+│ \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/);
  });

  it('prints the API’s own JSON with --json', async () => {
    const created = await cli(['keys', 'create', '--name', 'json', '--scopes', 'read', '--json']);
    const key = created.json<{ id: string; key: string; scopes: string[] }>();
    expect(key.key).toMatch(/^csk_/);
    expect(key.scopes).toContain('audit:read');

    const listed = await cli(['keys', 'list', '--limit', '1', '--json']);
    const fromApi = await app.http.get('/v1/keys?limit=1', org.adminKey);
    expect(listed.json()).toEqual(fromApi.body);
    expect(listed.stderr).toBe('');
  });

  it('pages lists: one page with where the next starts, --cursor for it, --all for every page', async () => {
    const first = await cli(['keys', 'list', '--limit', '1']);
    const cursor = /^more: --cursor (\S+) \(or --all\)$/m.exec(first.stderr)?.[1];
    expect(cursor).toBeDefined();

    const second = await cli(['keys', 'list', '--limit', '1', '--cursor', cursor!, '--json']);
    const fromApi = await app.http.get(
      `/v1/keys?limit=1&cursor=${encodeURIComponent(cursor!)}`,
      org.adminKey,
    );
    expect(second.json()).toEqual(fromApi.body);

    const all = (await cli(['keys', 'list', '--all', '--limit', '1', '--json'])).json<{ data: unknown[] }>();
    const every = await app.http.get<{ data: unknown[] }>('/v1/keys?limit=100', org.adminKey);
    expect(all).toEqual({ data: every.body.data, next_cursor: null });
    expect(all.data.length).toBeGreaterThan(1);
  });

  it('exits 1 with "error_code: message (request_id)" when the API refuses a revoked key', async () => {
    const minted = (await cli(['keys', 'create', '--name', 'gone', '--scopes', 'read', '--json'])).json<{
      id: string;
      key: string;
    }>();
    await cli(['keys', 'revoke', minted.id]);
    const recorder = recordingFetch();

    const { code, stderr, stdout } = await cli(['keys', 'list'], {
      env: { CP_API_KEY: minted.key },
      fetch: recorder.fetch,
    });

    expect(code).toBe(1);
    expect(stdout).toBe('');
    const requestId = recorder.exchanges[0]!.responseHeaders!.get('x-request-id');
    expect(stderr).toMatch(new RegExp(`^invalid_api_key: .+ \\(${requestId}\\)\\n$`));
  });

  it('exits 1 with the fields of a validation_error', async () => {
    const { code, stderr } = await cli([
      'keys',
      'create',
      '--name',
      'x',
      '--scopes',
      'read',
      '--expires-in-days',
      '0',
    ]);
    expect(code).toBe(1);
    expect(stderr).toMatch(/^validation_error: /);
    expect(stderr).toMatch(/^ {2}expires_in_days: /m);
  });

  it('names each field of a validation_error once, though the API’s message names it too', async () => {
    for (const [argv, field] of [
      [['keys', 'list', '--cursor', 'garbage'], 'cursor'],
      [['keys', 'create', '--name', 'x', '--scopes', 'read', '--expires-in-days', '999'], 'expires_in_days'],
    ] as const) {
      const { code, stderr } = await cli([...argv]);
      expect({ argv, code }).toEqual({ argv, code: 1 });
      expect(stderr).toMatch(new RegExp(`^ {2}${field}: \\S`, 'm'));
      expect(stderr).not.toContain(`${field}: ${field}:`);
    }
  });

  it('exits 2 on an unknown flag, a bad number or a missing argument, without a request', async () => {
    const recorder = recordingFetch();
    for (const argv of [
      ['keys', 'list', '--bogus'],
      ['keys', 'create', '--name', 'x', '--scopes', 'read', '--expires-in-days', 'soon'],
      ['keys', 'revoke'],
      ['keys', 'list', '--limit', '0'],
      ['audit', 'tail', '--limit', '101'],
      ['sessions', 'open'],
      ['nonsense'],
    ]) {
      const { code, stderr } = await cli(argv, { fetch: recorder.fetch });
      expect({ argv, code }).toEqual({ argv, code: 2 });
      expect(stderr).toMatch(/^error: /);
    }
    expect(recorder.exchanges).toEqual([]);
  });

  it('exits 2 when no API key is given, and takes --api-key over CP_API_KEY', async () => {
    const missing = await cli(['keys', 'list'], { env: { CP_API_KEY: undefined } });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('CP_API_KEY');

    const flagged = await cli(['keys', 'list', '--api-key', org.adminKey, '--json'], {
      env: { CP_API_KEY: undefined },
    });
    expect(flagged.code).toBe(0);
  });

  it('exits 2 on a key no header can carry, without a request and without printing it', async () => {
    const recorder = recordingFetch();
    for (const key of [`${org.adminKey}\n# ci key`, `“${org.adminKey}”`, `${org.adminKey} x`]) {
      const { code, stderr } = await cli(['keys', 'list'], {
        env: { CP_API_KEY: key },
        fetch: recorder.fetch,
      });
      expect(code).toBe(2);
      expect(stderr).toMatch(/^error: the API key holds a space, a line break or a character outside ASCII/);
      expect(stderr).not.toContain(org.adminKey.slice(4));
    }
    expect(recorder.exchanges).toEqual([]);
  });

  it('masks the password of a base URL it refuses', async () => {
    const { code, stderr } = await cli([
      '--base-url',
      'http://ci:hunter2secret@127.0.0.1:8080',
      'keys',
      'list',
    ]);
    expect(code).toBe(2);
    expect(stderr).toContain('http://ci:***@127.0.0.1:8080');
    expect(stderr).not.toContain('hunter2secret');
  });

  it('exits 3 when what answers at the base URL is not the API', async () => {
    const notApi = (async () =>
      new Response('ok', { status: 200, headers: { 'content-type': 'application/json' } })) as typeof fetch;
    const { code, stderr } = await cli(['keys', 'list'], { fetch: notApi });
    expect(code).toBe(3);
    expect(stderr).toMatch(/^unexpected_answer: the server's answer is not the API's JSON: is CP_BASE_URL/);
  });

  it('exits 3 for an error answer that is not the API (another server, a proxy page), without its body', async () => {
    const page = '<!DOCTYPE HTML><html><body>Not Found, and a long page</body></html>';
    const notApi = (async () =>
      new Response(page, { status: 404, headers: { 'content-type': 'text/html' } })) as typeof fetch;
    const { code, stderr } = await cli(['keys', 'list'], { fetch: notApi });
    expect(code).toBe(3);
    expect(stderr).toMatch(/^unexpected_answer: the server's answer \(HTTP 404\) is not the API's JSON/);
    expect(stderr).not.toContain('DOCTYPE');
    // JSON that is not the API's error (a gateway's) is not the API either; the API's own is.
    const gateway = (async () => Response.json({ message: 'no route' }, { status: 502 })) as typeof fetch;
    expect((await cli(['keys', 'list'], { fetch: gateway })).code).toBe(3);
    const api = (async () =>
      Response.json({ error_code: 'not_found', message: 'key not found' }, { status: 404 })) as typeof fetch;
    const refused = await cli(['keys', 'list'], { fetch: api });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^not_found: key not found/);
  });

  it('prints control characters from the server as escapes, never to the terminal', async () => {
    const name = 'k\x1b]52;c;ZWNobyBwd25lZA==\x07\x9b31m';
    const created = await cli(['keys', 'create', '--name', name, '--scopes', 'read']);
    expect(created.code).toBe(0);
    expect(created.stdout).toContain('k\\u001b]52;c;ZWNobyBwd25lZA==\\u0007\\u009b31m');
    expect([...created.stdout].some((c) => ['\x1b', '\x07', '\x9b'].includes(c))).toBe(false);
    const listed = await cli(['keys', 'list', '--json']);
    expect(listed.json<{ data: { name: string }[] }>().data.map((k) => k.name)).toContain(name);
    // In a table too, escaped as the server sent it: nothing the table library added.
    expect((await cli(['keys', 'create', '--name', 'r\x1b[31mred', '--scopes', 'read'])).code).toBe(0);
    const table = await cli(['keys', 'list']);
    expect(table.stdout).toContain('k\\u001b]52;c;ZWNobyBwd25lZA==\\u0007\\u009b31m');
    expect(table.stdout).toContain('r\\u001b[31mred');
    expect(table.stdout).not.toContain('[39m');
  });

  it('exits 3 when nothing answers at the base URL, and takes --base-url over CP_BASE_URL', async () => {
    const nowhere = `http://127.0.0.1:${await closedPort()}`;
    const unreachable = await cli(['keys', 'list'], { env: { CP_BASE_URL: nowhere } });
    expect(unreachable.code).toBe(3);
    expect(unreachable.stderr).toMatch(/^network_error: no answer from http:\/\/127\.0\.0\.1:\d+/);
    expect(unreachable.stderr).toContain('is the URL right');

    const flagged = await cli(['--base-url', app.http.baseUrl, 'keys', 'list'], {
      env: { CP_BASE_URL: nowhere },
    });
    expect(flagged.code).toBe(0);
  });

  it('exits 2 on a base URL that is no http(s) server, naming where it came from, without a request', async () => {
    const recorder = recordingFetch();
    for (const [given, source] of [
      [{ argv: ['--base-url', 'not-a-url'] }, '--base-url'],
      [{ argv: ['--base-url', 'ftp://example.com'] }, '--base-url'],
      [{ env: { CP_BASE_URL: 'not-a-url' } }, 'CP_BASE_URL'],
      [{ env: { CP_BASE_URL: `${app.http.baseUrl}?x=1` } }, 'CP_BASE_URL'],
    ] as const) {
      const env = 'env' in given ? given.env : {};
      const argv = 'argv' in given ? given.argv : [];
      const { code, stderr } = await cli([...argv, 'keys', 'list'], { env, fetch: recorder.fetch });
      expect({ given, code }).toEqual({ given, code: 2 });
      expect(stderr).toMatch(
        new RegExp(`^error: ${source} ".+": .+ e\\.g\\. http://127\\.0\\.0\\.1:8080\\n`),
      );
    }
    expect(recorder.exchanges).toEqual([]);
  });

  it('takes a base URL ending in /v1 (as an OpenAI SDK is given it) or in slashes as the server', async () => {
    const recorder = recordingFetch();
    for (const baseUrl of [`${app.http.baseUrl}/v1`, `${app.http.baseUrl}/v1/`, `${app.http.baseUrl}//`]) {
      const { code } = await cli(['--base-url', baseUrl, 'keys', 'list', '--json'], {
        fetch: recorder.fetch,
      });
      expect({ baseUrl, code }).toEqual({ baseUrl, code: 0 });
    }
    expect(recorder.exchanges.map((e) => e.url.pathname)).toEqual(['/v1/keys', '/v1/keys', '/v1/keys']);
  });

  it('adds a credential from an environment variable and never prints its secret', async () => {
    const { code, stdout } = await cli(
      ['credentials', 'add', '--name', 'mock', '--provider', 'mock', '--secret-env', 'MOCK_SECRET'],
      { env: { MOCK_SECRET: 'mock-secret-abcd' } },
    );
    expect(code).toBe(0);
    expect(stdout).toMatch(/credential_ref\s+│ cred_/);
    expect(stdout).toContain('…abcd');
    expect(stdout).not.toContain('mock-secret-abcd');

    const unset = await cli([
      'credentials',
      'add',
      '--name',
      'm',
      '--provider',
      'mock',
      '--secret-env',
      'NOPE',
    ]);
    expect(unset.code).toBe(2);
  });

  it('creates an agent and shows its AGBOM as a table and as the API’s document', async () => {
    const created = await cli([
      'agents',
      'create',
      '--name',
      'reviewer',
      '--allowed-models',
      'mock-1,mock-2',
      '--tools',
      'search@2.1',
      '--metadata',
      '{"team":"qa"}',
      '--json',
    ]);
    const agent = created.json<{ id: string; tools: unknown[]; metadata: unknown }>();
    expect(agent.tools).toEqual([{ name: 'search', version: '2.1' }]);
    expect(agent.metadata).toEqual({ team: 'qa' });

    const table = await cli(['agents', 'agbom', agent.id]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/machine-learning-model\s+│ mock-1/);
    expect(table.stdout).toMatch(/application\s+│ search\s+│ 2\.1/);

    const json = await cli(['agents', 'agbom', agent.id, '--json']);
    const fromApi = await app.http.get(`/v1/agents/${agent.id}/agbom`, org.adminKey);
    expect(json.json()).toEqual(fromApi.body);
  });

  it('exits 2 on metadata that is not a JSON object', async () => {
    const { code, stderr } = await cli(['agents', 'create', '--name', 'x', '--metadata', '[1]']);
    expect(code).toBe(2);
    expect(stderr).toContain('not a JSON object');
  });
});
