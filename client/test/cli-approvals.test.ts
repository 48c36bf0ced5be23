import { startTestApp, type TestApp } from '../../test/support/test-app';
import { approverKeys, requireApproval } from '../../test/support/approval-fixtures';
import { mintKey } from '../../test/support/factories';
import { eventually, openSession, setUpInvoking, type InvokeSetup } from '../../test/support/invoke-fixtures';
import { cliRunner, type CliResult } from './support/cli-run';

/** approvals and audit through the CLI, against the real API and workers. */
describe('control-plane CLI: approvals, audit', () => {
  let app: TestApp;
  let setup: InvokeSetup;
  let cli: ReturnType<typeof cliRunner>;
  let approver: ReturnType<typeof cliRunner>;

  beforeAll(async () => {
    app = await startTestApp({ workers: true });
    setup = await setUpInvoking(app.http, { models: ['mock-approve'] });
    await requireApproval(app.http, setup.org.adminKey, { model: 'mock-approve' });
    const [approverKey] = await approverKeys(app.http, setup.org.adminKey, 1);
    // The agent's key asks (and reads the audit log); the admin's approver key votes. A key the
    // requester minted could not: it would be the requester approving itself.
    const agentKey = (await mintKey(app.http, setup.org.adminKey, ['invoke'], 'agent')).key;
    cli = cliRunner({ baseUrl: app.http.baseUrl, apiKey: agentKey });
    approver = cliRunner({ baseUrl: app.http.baseUrl, apiKey: approverKey });
  });
  afterAll(() => app?.close());

  /** An invoke through the CLI that pauses for approval; resolves once it said so on stderr. */
  async function pausedInvoke() {
    const { id: sessionId } = await openSession(app.http, setup.org.adminKey, {
      agent_id: setup.agentId,
      max_cost_usd: 1,
    });
    let stderr = '';
    const finished: Promise<CliResult> = cli(
      ['invoke', '--session', sessionId, '--model', 'mock-approve', '--max-tokens', '16', 'hello'],
      { watch: (output) => (stderr = output.stderr) },
    );
    const approvalId = await eventually(() => /^awaiting_approval: approval (apr_\S+)/m.exec(stderr)?.[1]);
    return { sessionId, approvalId, finished };
  }

  it('lists the pending approval, approves it with a comment, and the waiting invoke succeeds', async () => {
    const { sessionId, approvalId, finished } = await pausedInvoke();

    const listed = await approver(['approvals', 'list', '--status', 'pending', '--session', sessionId]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(approvalId);
    expect(listed.stdout).toMatch(/│ pending\s+│ mock-approve\s+│ \$0\.\d+/);

    const approved = await approver(['approvals', 'approve', approvalId, '--comment', 'looks fine']);
    expect(approved.code).toBe(0);
    expect(approved.stdout).toMatch(/status\s+│ approved/);
    expect(approved.stdout).toContain('approve by key_');
    expect(approved.stdout).toContain(': looks fine');

    const done = await finished;
    expect(done.code).toBe(0);
    expect(done.stdout).toBe('mock reply to: hello\n');
    expect(done.stderr).toMatch(/^succeeded inv_/m);

    const again = await approver(['approvals', 'approve', approvalId]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^invalid_state: /);
  });

  it('rejects through the CLI: the waiting invoke ends denied, exit 4', async () => {
    const { approvalId, finished } = await pausedInvoke();
    const rejected = await approver(['approvals', 'reject', approvalId, '--comment', 'no', '--json']);
    expect(rejected.json()).toMatchObject({ id: approvalId, status: 'rejected', votes: [{ comment: 'no' }] });

    const done = await finished;
    expect(done.code).toBe(4);
    expect(done.stderr).toMatch(/^denied inv_\S+: approval_rejected: /m);
  });

  it('tails the newest entries oldest first, as a table or as the API’s entries one per line', async () => {
    const table = await cli(['audit', 'tail', '--limit', '3']);
    expect(table.code).toBe(0);
    const seqs = [...table.stdout.matchAll(/^│ (\d+)\s+│/gm)].map((m) => Number(m[1]));
    expect(seqs).toHaveLength(3);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));

    const json = await cli(['audit', 'tail', '--limit', '3', '--json']);
    const lines = json.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line));
    const fromApi = await app.http.get<{ data: unknown[] }>('/v1/audit?limit=3', setup.org.adminKey);
    expect(lines).toEqual([...fromApi.body.data].reverse());

    // A filter that matches nothing says so, not that the log is empty (QA).
    const none = await cli(['audit', 'tail', '--action', 'no.such.action']);
    expect(none).toMatchObject({ code: 0, stdout: '' });
    expect(none.stderr).toContain('no audit entries with action no.such.action yet');
  });

  it('follows the log until interrupted', async () => {
    const stop = new AbortController();
    let stdout = '';
    const following = cli(['audit', 'tail', '--limit', '1', '--follow', '--interval', '1', '--json'], {
      signal: stop.signal,
      watch: (output) => (stdout = output.stdout),
    });
    await eventually(() => stdout.length > 0);
    const key = await mintKey(app.http, setup.org.adminKey, ['read'], 'followed');

    const line = await eventually(() =>
      stdout.split('\n').find((l) => l.includes(key.id) && l.includes('"key.created"')),
    );
    stop.abort();

    expect((await following).code).toBe(0);
    const seqs = stdout
      .trimEnd()
      .split('\n')
      .map((l) => (JSON.parse(l) as { seq: number }).seq);
    expect(new Set(seqs).size).toBe(seqs.length); // nothing printed twice
    expect(JSON.parse(line)).toMatchObject({ resource: { id: key.id } });
  });

  it('refuses a --follow interval under a second (a tight loop spends the key’s rate limit), exit 2', async () => {
    for (const interval of ['0', '-1', '0.5']) {
      const { code, stderr } = await cli(['audit', 'tail', '--follow', '--interval', interval]);
      expect({ interval, code }).toEqual({ interval, code: 2 });
      expect(stderr).toContain('must be at least 1');
    }
  });

  it('verifies the chain: the count checked in a table, the API’s answer with --json', async () => {
    const table = await cli(['audit', 'verify']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/valid\s+│ true/);
    expect(table.stdout).toMatch(/entries_checked\s+│ [1-9]\d*/);

    const json = await cli(['audit', 'verify', '--json']);
    const fromApi = await app.http.get<{ entries_checked: number }>('/v1/audit/verify', setup.org.adminKey);
    expect(json.json()).toMatchObject({ valid: true, first_broken_seq: null });
    expect(json.json<{ entries_checked: number }>().entries_checked).toBeLessThanOrEqual(
      fromApi.body.entries_checked,
    );

    const spun = await cli(['audit', 'verify'], { isTTY: true });
    const head = await app.http.get<{ seq: number }>('/v1/audit/head', setup.org.adminKey);
    const shown = Number(/verifying the audit chain: (\d+) entries/.exec(spun.stderr)?.[1]);
    expect(shown).toBeGreaterThan(0); // the signed head's seq when the CLI asked
    expect(shown).toBeLessThanOrEqual(head.body.seq);
  });
});
