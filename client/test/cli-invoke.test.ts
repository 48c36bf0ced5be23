import { startTestApp, type TestApp } from '../../test/support/test-app';
import { openSession, setUpInvoking, type InvokeSetup } from '../../test/support/invoke-fixtures';
import { cliRunner } from './support/cli-run';
import { recordingFetch } from './support/recording-fetch';

const DENIED = 'mock-denied';

/** sessions, invoke and stats through the CLI, against the real API and workers. */
describe('control-plane CLI: sessions, invoke, stats', () => {
  let app: TestApp;
  let setup: InvokeSetup;
  let cli: ReturnType<typeof cliRunner>;

  beforeAll(async () => {
    app = await startTestApp({ workers: true });
    setup = await setUpInvoking(app.http, { models: ['mock-1', DENIED] });
    const policy = await app.http.post(
      '/v1/policies',
      { name: 'no denied model', rules: [{ type: 'deny_models', models: [DENIED] }] },
      setup.org.adminKey,
    );
    expect(policy.status).toBe(201);
    cli = cliRunner({ baseUrl: app.http.baseUrl, apiKey: setup.org.adminKey });
  });
  afterAll(() => app?.close());

  const session = async (maxCostUsd = 1) =>
    (await openSession(app.http, setup.org.adminKey, { agent_id: setup.agentId, max_cost_usd: maxCostUsd }))
      .id;
  const invoke = (sessionId: string, model: string, ...more: string[]) =>
    cli(['invoke', '--session', sessionId, '--model', model, '--max-tokens', '16', 'hello', ...more]);

  it('opens a session with the API’s caps, shows it and closes it', async () => {
    const opened = await cli([
      'sessions',
      'open',
      '--agent',
      setup.agentId,
      '--max-cost-usd',
      '1.5',
      '--max-calls',
      '10',
      '--ttl',
      '600',
      '--json',
    ]);
    expect(opened.code).toBe(0);
    const body = opened.json<{ id: string; limits: unknown; created_at: string; expires_at: string }>();
    expect(body.limits).toEqual({ max_cost_usd: 1.5, max_calls: 10, max_tokens: null });
    expect(Date.parse(body.expires_at) - Date.parse(body.created_at)).toBe(600_000);

    const shown = await cli(['sessions', 'show', body.id]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/status\s+│ open/);
    expect(shown.stdout).toMatch(/cost_usd\s+│ \$0\.00 \/ \$1\.50/);
    expect(shown.stdout).toMatch(/calls\s+│ 0 \/ 10/);
    expect(shown.stdout).toMatch(/tokens\s+│ 0 \(no cap\)/);

    const closed = await cli(['sessions', 'close', body.id, '--json']);
    expect(closed.json()).toMatchObject({ id: body.id, status: 'closed' });
  });

  it('prints the output on stdout and the outcome on stderr, exit 0', async () => {
    const { code, stdout, stderr } = await invoke(await session(), 'mock-1');
    expect(code).toBe(0);
    expect(stdout).toBe('mock reply to: hello\n');
    // docs/mock-provider.md: 8 input and 5 output tokens at $1 and $2 per million.
    expect(stderr).toMatch(/^succeeded inv_\S+: 8 input \+ 5 output tokens, \$0\.000018\n$/);
  });

  it('prints the finished invocation as the API presents it with --json', async () => {
    const { code, json } = await invoke(await session(), 'mock-1', '--json');
    expect(code).toBe(0);
    const invocation = json<{ id: string; status: string }>();
    expect(invocation.status).toBe('succeeded');
    const fromApi = await app.http.get(`/v1/llm/invocations/${invocation.id}`, setup.org.adminKey);
    expect(invocation).toEqual(fromApi.body);
  });

  it('sends --system and --messages as the API’s messages', async () => {
    const sessionId = await session();
    const system = await invoke(sessionId, 'mock-1', '--system', 'be brief', '--json');
    const answered = system.json<{ output: { content: string }; usage: { input_tokens: number } }>();
    expect(answered.output.content).toBe('mock reply to: hello');
    expect(answered.usage.input_tokens).toBeGreaterThan(8); // the system message was sent too

    const messages = JSON.stringify([{ role: 'user', content: 'from json' }]);
    const given = await cli([
      'invoke',
      '--session',
      sessionId,
      '--model',
      'mock-1',
      '--max-tokens',
      '16',
      '--messages',
      messages,
    ]);
    expect(given.stdout).toBe('mock reply to: from json\n');

    const both = await invoke(sessionId, 'mock-1', '--messages', messages);
    expect(both.code).toBe(2);
  });

  it('draws a spinner on stderr only when stderr is a terminal', async () => {
    const sessionId = await session();
    const piped = await invoke(sessionId, 'mock-1', '--wait-seconds', '0');
    expect(piped.stderr).not.toContain('invoking mock-1');

    const drawn = await cli(
      [
        'invoke',
        '--session',
        sessionId,
        '--model',
        'mock-1',
        '--max-tokens',
        '16',
        'hi',
        '--wait-seconds',
        '0',
      ],
      { isTTY: true },
    );
    expect(drawn.code).toBe(0);
    expect(drawn.stderr).toContain('invoking mock-1');
    expect(drawn.stdout).toBe('mock reply to: hi\n');
  });

  it('exits 4 when the guardian denies the invocation, naming the reason', async () => {
    const { code, stdout, stderr } = await invoke(await session(), DENIED);
    expect(code).toBe(4);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/^denied inv_\S+: \S+: /);

    const json = await invoke(await session(), DENIED, '--json');
    expect(json.code).toBe(4);
    expect(json.json()).toMatchObject({ status: 'denied' });
  });

  it('exits 2 on a --timeout of 0 or less, before anything is submitted (and billed)', async () => {
    const recorder = recordingFetch();
    const sessionId = await session();
    for (const timeout of ['0', '-1']) {
      const { code, stderr } = await cli(
        [
          'invoke',
          '--session',
          sessionId,
          '--model',
          'mock-1',
          '--max-tokens',
          '16',
          'hi',
          '--timeout',
          timeout,
        ],
        { fetch: recorder.fetch },
      );
      expect({ timeout, code }).toEqual({ timeout, code: 2 });
      expect(stderr).toMatch(
        /^error: option '--timeout <seconds>' argument '-?\d+' is invalid\. must be more than 0\./,
      );
    }
    expect(recorder.exchanges).toEqual([]);
  });

  it('names the field of a refused --wait-seconds once', async () => {
    const { code, stderr } = await invoke(await session(), 'mock-1', '--wait-seconds', '999');
    expect(code).toBe(1);
    expect(stderr).toMatch(/^ {2}wait: at most \d+ seconds/m);
    expect(stderr).not.toContain('wait: wait:');
  });

  it('exits 1 with budget_exceeded when the session cannot pay', async () => {
    const { code, stderr } = await invoke(await session(0.000001), 'mock-1');
    expect(code).toBe(1);
    expect(stderr).toMatch(/^budget_exceeded: .+ \(\S+\)\n$/);
  });

  it('shows usage stats grouped as asked, totals matching the API', async () => {
    const sessionId = await session();
    await invoke(sessionId, 'mock-1');

    const table = await cli(['stats', '--group-by', 'model']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/│ mock-1\s+│ \d+/);
    expect(table.stdout).toMatch(/│ total\s+│/);

    const json = await cli(['stats', '--group-by', 'session', '--json']);
    const stats = json.json<{ groups: { key: string; calls: number }[]; from: string; to: string }>();
    expect(stats.groups.find((g) => g.key === sessionId)?.calls).toBe(1);
    const fromApi = await app.http.get(
      `/v1/stats/usage?group_by=session&from=${stats.from}&to=${stats.to}`,
      setup.org.adminKey,
    );
    expect(stats).toEqual(fromApi.body);

    const bad = await cli(['stats', '--group-by', 'planet']);
    expect(bad.code).toBe(2);
  });
});
