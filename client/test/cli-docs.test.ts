import { startTestApp, type TestApp } from '../../test/support/test-app';
import { signupOrg, type SignedUpOrg } from '../../test/support/factories';
import { cliRunner } from './support/cli-run';
import { cliDocExamples } from './support/doc-examples';

/** docs/cli.md's examples, run as written. */
describe('control-plane CLI: the examples of docs/cli.md', () => {
  const examples = cliDocExamples();

  it('finds the examples (one per command at least)', () => {
    const commands = new Set(examples.map((e) => e.argv.filter((w) => !w.startsWith('-'))[0]));
    expect([...commands].sort()).toEqual(
      ['agents', 'approvals', 'audit', 'credentials', 'invoke', 'keys', 'sessions', 'stats'].sort(),
    );
  });

  it('are each taken by the CLI: every one sends its request (a stub answers 404)', async () => {
    const sent: string[] = [];
    const stub = (async (input: RequestInfo | URL, init?: RequestInit) => {
      sent.push(new Request(input, init).url);
      const body = { error_code: 'not_found', message: 'stub' };
      return Response.json(body, { status: 404 });
    }) as typeof fetch;
    const cli = cliRunner({ baseUrl: 'http://cp.test', apiKey: 'csk_stub' });
    for (const { line, argv, env } of examples) {
      sent.length = 0;
      const { code, stderr } = await cli(argv, { env, fetch: stub });
      expect({ line, code, stderr }).toEqual({ line, code: 1, stderr: 'not_found: stub\n' });
      expect({ line, sent: sent.length > 0 }).toEqual({ line, sent: true });
    }
  });

  describe('against the service', () => {
    let app: TestApp;
    let org: SignedUpOrg;

    beforeAll(async () => {
      app = await startTestApp();
      org = await signupOrg(app.http);
    });
    afterAll(() => app?.close());

    it('shows stats as the stats example asks, whatever the date', async () => {
      const cli = cliRunner({ baseUrl: app.http.baseUrl, apiKey: org.adminKey });
      const stats = examples.filter((e) => e.argv[0] === 'stats');
      expect(stats.length).toBeGreaterThan(0);
      for (const { line, argv } of stats) {
        const { code, stderr } = await cli(argv);
        expect({ line, code, stderr }).toEqual({ line, code: 0, stderr: '' });
      }
    });
  });
});
