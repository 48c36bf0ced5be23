import { StubProvider } from '../support/stub-provider';
import { startTestApp, type TestApp } from '../support/test-app';
import { mintKey } from '../support/factories';
import { personWithRole } from '../browser/approvals-page-fixtures';
import {
  eventually,
  finished,
  invoke,
  openSession,
  setUpInvoking,
  type InvokeSetup,
} from '../support/invoke-fixtures';
import {
  approverKeys,
  pausedInvoke,
  requireApproval,
  sessionFor,
  vote,
  type ApprovalBody,
} from '../support/approval-fixtures';

/**
 * Human approvals end to end: a require_approval verdict pauses the invocation, people vote, and
 * the invocation resumes into the invoke stage or is denied, exactly once whatever races.
 */
let app: TestApp;
let stub: StubProvider;
let setup: InvokeSetup;
let agentKey: string;
let approvers: string[];
let model = 0;

const completion = {
  choices: [{ message: { role: 'assistant', content: 'approved answer' } }],
  usage: { prompt_tokens: 10, completion_tokens: 5 },
};

/** Each test gets a model of its own, so its policy touches no other test. */
async function gated(
  options: { approversRequired?: number; timeoutSeconds?: number; extraRules?: unknown[] } = {},
) {
  const name = `gated-${++model}`;
  await app.http.call('PUT', `/v1/pricing/${name}`, {
    token: setup.org.adminKey,
    body: { input_per_mtok_usd: 1, output_per_mtok_usd: 2 },
  });
  const policyId = await requireApproval(app.http, setup.org.adminKey, { model: name, ...options });
  return { model: name, policyId };
}

const body = (sessionId: string, modelName: string, content = 'please run this') => ({
  session_id: sessionId,
  model: modelName,
  messages: [{ role: 'user', content }],
  max_tokens: 100,
});

type Entry = { action: string; actor: { id: string }; details: Record<string, unknown> };

async function auditOf(resourceId: string): Promise<Entry[]> {
  const res = await app.http.get<{ data: Entry[] }>(
    `/v1/audit?resource_id=${resourceId}&limit=100`,
    setup.org.adminKey,
  );
  return res.body.data;
}

/**
 * Approves an approval whose invocation can no longer run: 200 when the vote comes first (the
 * check after the approval then fails the invocation), 409 when the approvals sweep withdrew it
 * first (approval-withdrawn.test.ts). Either way the invocation ends failed with the same error.
 */
async function voteUnlessWithdrawn(approvalId: string): Promise<number> {
  const voted = await vote(app.http, approvers[0] as string, approvalId, 'approve');
  expect([200, 409]).toContain(voted.status);
  return voted.status;
}

const requestsFor = (marker: string) =>
  stub.requests.filter((r) => JSON.stringify(r.body).includes(marker)).length;

beforeAll(async () => {
  stub = await new StubProvider().start();
  stub.answer(200, completion);
  app = await startTestApp({ workers: true, env: { CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true' } });
  setup = await setUpInvoking(app.http, { baseUrl: stub.url, models: ['free-model'] });
  // The agent's key invokes; it may not vote on what it asked.
  agentKey = (
    await mintKey(
      app.http,
      setup.org.adminKey,
      ['llm:invoke', 'sessions:read', 'policies:write', 'policies:read'],
      'agent',
    )
  ).key;
  approvers = await approverKeys(app.http, setup.org.adminKey, 3);
  await app.http.call('PATCH', `/v1/agents/${setup.agentId}`, {
    token: setup.org.adminKey,
    body: { allowed_models: Array.from({ length: 40 }, (_, i) => `gated-${i + 1}`).concat('free-model') },
  });
}, 60_000);
afterAll(async () => {
  await app.close();
  await stub.stop();
});

describe('a require_approval verdict pauses the invocation', () => {
  it('waits as awaiting_approval with its approval id, holding nothing, and runs the approved request once approved', async () => {
    const { model: m, policyId } = await gated({
      extraRules: [{ type: 'redact_pattern', pattern: 'sk-[a-z0-9]+', replacement: '[key]' }],
    });
    const session = await sessionFor(app.http, setup);
    const waited = await invoke(app.http, agentKey, body(session.id, m, 'marker-1 uses sk-abc123'), 1);
    expect(waited.status).toBe(202);
    expect(waited.body).toMatchObject({
      status: 'awaiting_approval',
      approval_id: expect.stringMatching(/^apr_/),
    });
    const approvalId = waited.body.approval_id as string;

    const approval = (await app.http.get<ApprovalBody>(`/v1/approvals/${approvalId}`, approvers[0])).body;
    expect(approval).toMatchObject({
      status: 'pending',
      invocation_id: waited.body.id,
      policy_id: policyId,
      approvers_required: 1,
      requested_by: { type: 'api_key' },
      summary: { model: m, max_tokens: 100, tool: null },
    });
    // The approver sees the request as it would run: redacted.
    expect(approval.summary.messages).toEqual([{ role: 'user', content: 'marker-1 uses [key]' }]);
    expect(approval.summary).not.toHaveProperty('tools'); // it offers none
    expect(approval.request_digest).toMatch(/^[0-9a-f]{64}$/);
    // Paused: no reservation is held and the provider was not called.
    const live = await app.http.get<{ usage: { reserved_usd: number } }>(
      `/v1/sessions/${session.id}`,
      setup.org.adminKey,
    );
    expect(live.body.usage.reserved_usd).toBe(0);
    expect(requestsFor('marker-1')).toBe(0);

    const voted = await vote(app.http, approvers[0] as string, approvalId, 'approve', 'looks fine');
    expect(voted.status).toBe(200);
    expect(voted.body).toMatchObject({
      status: 'approved',
      votes: [{ decision: 'approve', comment: 'looks fine' }],
    });
    const done = await finished(app.http, agentKey, waited.body.id);
    expect(done).toMatchObject({
      status: 'succeeded',
      output: { content: 'approved answer' },
      approval_id: approvalId,
    });
    const sent = stub.requests.filter((r) => JSON.stringify(r.body).includes('marker-1'));
    expect(sent).toHaveLength(1);
    expect(JSON.stringify(sent[0]?.body)).toContain('marker-1 uses [key]');
    expect(JSON.stringify(sent[0]?.body)).not.toContain('sk-abc123');
  });

  it('shows the approver the tools a chat call offers and its tool_choice, redacted as they would be sent (QA)', async () => {
    const { model: m } = await gated({
      extraRules: [{ type: 'redact_pattern', pattern: 'sk-[a-z0-9]+', replacement: '[key]' }],
    });
    const session = await sessionFor(app.http, setup);
    const lookup = {
      type: 'function',
      function: {
        name: 'lookup',
        description: 'marker-tools: uses sk-abc123',
        parameters: { type: 'object' },
      },
    };
    const choice = { type: 'function', function: { name: 'lookup' } };
    const chat = app.http.call<{ choices?: unknown[] }>('POST', '/v1/chat/completions', {
      token: agentKey,
      headers: { 'X-Session-Id': session.id },
      body: {
        model: m,
        max_tokens: 20,
        messages: [{ role: 'user', content: 'go' }],
        tools: [lookup],
        tool_choice: choice,
      },
    });
    const pending = await eventually(async () => {
      const list = await app.http.get<{ data: ApprovalBody[] }>(
        `/v1/approvals?status=pending&session_id=${session.id}`,
        approvers[0],
      );
      return list.body.data[0];
    });
    const approval = (await app.http.get<ApprovalBody>(`/v1/approvals/${pending.id}`, approvers[0])).body;
    expect(approval.summary.tools).toEqual([
      { ...lookup, function: { ...lookup.function, description: 'marker-tools: uses [key]' } },
    ]);
    expect(approval.summary.tool_choice).toEqual(choice);
    expect(pending.summary).not.toHaveProperty('tools'); // a list carries only the summary's facts
    expect((await vote(app.http, approvers[0] as string, pending.id, 'approve')).status).toBe(200);
    expect((await chat).status).toBe(200);
    const sent = stub.requests.filter((r) => JSON.stringify(r.body).includes('marker-tools'));
    expect((sent[0]?.body as { tools: unknown }).tools).toEqual(approval.summary.tools);
  });

  it('a rejection denies the invocation with approval_rejected and never calls the provider', async () => {
    const { model: m } = await gated();
    const session = await sessionFor(app.http, setup);
    const { invocation, approval } = await pausedInvoke(app.http, agentKey, body(session.id, m, 'marker-2'));
    const res = await vote(app.http, approvers[0] as string, approval.id, 'reject', 'not today');
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('rejected');
    const done = await finished(app.http, agentKey, invocation.id);
    expect(done).toMatchObject({ status: 'denied', error: { error_code: 'approval_rejected' }, cost_usd: 0 });
    expect(requestsFor('marker-2')).toBe(0);
    // Its last entry carries its totals, as every invocation's last entry does (QA: only ids).
    const [last] = (await auditOf(invocation.id)).filter((e) => e.action === 'llm.invoke.denied');
    expect(last?.details).toEqual({
      approval_id: approval.id,
      session_id: session.id,
      model: m,
      provider: 'openai_compatible',
      input_tokens: 0,
      output_tokens: 0,
      cost_usd: 0,
      calls: 0,
      provider_attempts: 0,
      error_code: 'approval_rejected',
    });
  });

  it('times out: the approval ends expired and the invocation denied with approval_expired', async () => {
    const { model: m } = await gated({ timeoutSeconds: 1 });
    const session = await sessionFor(app.http, setup);
    const { invocation, approval } = await pausedInvoke(app.http, agentKey, body(session.id, m, 'marker-3'));
    const done = await finished(app.http, agentKey, invocation.id);
    expect(done).toMatchObject({ status: 'denied', error: { error_code: 'approval_expired' } });
    expect(done.error?.message).toMatch(/timed out/);
    const after = await app.http.get<ApprovalBody>(`/v1/approvals/${approval.id}`, approvers[0]);
    expect(after.body).toMatchObject({ status: 'expired', resolved_at: expect.any(String) });
    // A vote after it expired is refused.
    const late = await vote(app.http, approvers[0] as string, approval.id, 'approve');
    expect(late.status).toBe(409);
    expect(late.body).toMatchObject({ error_code: 'invalid_state', status: 'expired' });
    expect(requestsFor('marker-3')).toBe(0);
    const entries = await eventually(async () => {
      const found = await auditOf(approval.id);
      return found.some((e) => e.action === 'approval.expired') ? found : null;
    });
    expect(entries.filter((e) => e.action === 'approval.expired')).toHaveLength(1);
  });
  it('a key expired while it waited: the approved request is not run, failed expired_api_key', async () => {
    const { model: m } = await gated();
    const session = await sessionFor(app.http, setup);
    const scopes = ['llm:invoke', 'sessions:read', 'policies:read'];
    const lapsing = await mintKey(app.http, setup.org.adminKey, scopes, 'expired while waiting');
    const paused = await pausedInvoke(app.http, lapsing.key, body(session.id, m, 'marker-expired'));
    await app.infra
      .knex('api_keys')
      .where({ id: lapsing.id })
      .update({ expires_at: new Date(Date.now() - 1000) });
    await voteUnlessWithdrawn(paused.approval.id);
    const done = await finished(app.http, setup.org.adminKey, paused.invocation.id);
    expect(done).toMatchObject({ status: 'failed', error: { error_code: 'expired_api_key' }, cost_usd: 0 });
    expect(requestsFor('marker-expired')).toBe(0);
  });

  it('a key revoked while it waited: the approved request is not run, failed invalid_api_key', async () => {
    const { model: m } = await gated();
    const session = await sessionFor(app.http, setup);
    const scopes = ['llm:invoke', 'sessions:read', 'policies:read'];
    const doomed = await mintKey(app.http, setup.org.adminKey, scopes, 'revoked while waiting');
    const paused = await pausedInvoke(app.http, doomed.key, body(session.id, m, 'marker-revoked'));
    // In the database, as a revocation whose own withdrawal of the approval did not happen (the
    // API died after the commit) or came after the vote; `DELETE /v1/keys` withdraws it at once
    // (approval-withdrawn.test.ts).
    await app.infra
      .knex('api_keys')
      .where({ id: doomed.id })
      .update({ revoked_at: new Date(Date.now() - 1000) });
    const voted = await voteUnlessWithdrawn(paused.approval.id);
    const done = await finished(app.http, setup.org.adminKey, paused.invocation.id);
    expect(done).toMatchObject({ status: 'failed', error: { error_code: 'invalid_api_key' }, cost_usd: 0 });
    if (voted === 200) expect(done.error?.message).toContain('the approved request was not run');
    expect(requestsFor('marker-revoked')).toBe(0);
  });
});

describe('who may vote', () => {
  it('refuses the requesting identity (self_approval_forbidden), a second vote by one identity, and a read-only key', async () => {
    const { model: m } = await gated({ approversRequired: 2 });
    const session = await sessionFor(app.http, setup);
    const { approval } = await pausedInvoke(app.http, agentKey, body(session.id, m, 'marker-4'));
    const self = await vote(app.http, agentKey, approval.id, 'approve');
    expect(self.status).toBe(403);
    expect(self.body.error_code).toBe('self_approval_forbidden');
    const reader = (await mintKey(app.http, setup.org.adminKey, ['read'])).key;
    const readOnly = await vote(app.http, reader, approval.id, 'approve');
    expect(readOnly.status).toBe(403);
    expect(readOnly.body.error_code).toBe('insufficient_scope');
    expect((await vote(app.http, approvers[0] as string, approval.id, 'approve')).status).toBe(200);
    const again = await vote(app.http, approvers[0] as string, approval.id, 'approve');
    expect(again.status).toBe(409);
    expect(again.body.error_code).toBe('conflict');
    const still = await app.http.get<ApprovalBody>(`/v1/approvals/${approval.id}`, approvers[0]);
    expect(still.body).toMatchObject({ status: 'pending' });
    expect(still.body.votes).toHaveLength(1);
  });

  it('needs approvers_required distinct approvals (N of M); a vote on a resolved approval is invalid_state', async () => {
    const { model: m } = await gated({ approversRequired: 2 });
    const session = await sessionFor(app.http, setup);
    const { invocation, approval } = await pausedInvoke(app.http, agentKey, body(session.id, m, 'marker-5'));
    const first = await vote(app.http, approvers[0] as string, approval.id, 'approve');
    expect(first.body.status).toBe('pending');
    expect(requestsFor('marker-5')).toBe(0);
    const second = await vote(app.http, approvers[1] as string, approval.id, 'approve');
    expect(second.body.status).toBe('approved');
    expect((await finished(app.http, agentKey, invocation.id)).status).toBe('succeeded');
    const late = await vote(app.http, approvers[2] as string, approval.id, 'reject');
    expect(late.status).toBe(409);
    expect(late.body).toMatchObject({ error_code: 'invalid_state', status: 'approved' });
    expect(requestsFor('marker-5')).toBe(1);
  });

  it('one rejection decides, whatever approvals came before', async () => {
    const { model: m } = await gated({ approversRequired: 3 });
    const session = await sessionFor(app.http, setup);
    const { invocation, approval } = await pausedInvoke(app.http, agentKey, body(session.id, m, 'marker-6'));
    await vote(app.http, approvers[0] as string, approval.id, 'approve');
    const rejected = await vote(app.http, approvers[1] as string, approval.id, 'reject');
    expect(rejected.body.status).toBe('rejected');
    expect((await finished(app.http, agentKey, invocation.id)).error?.error_code).toBe('approval_rejected');
  });
});

/** The dashboard session of a person invited to the org as an approver. */
async function approverSession(): Promise<string> {
  const { email, password } = await personWithRole(app.http, setup.org.adminKey, 'approver');
  const login = await app.http.post<{ session_token: string }>('/v1/auth/login', { email, password });
  return login.body.session_token;
}

describe('identities behind a key (a rotation is the same identity; a minter stands behind its keys)', () => {
  const rotate = async (token: string, keyId: string) => {
    const res = await app.http.post<{ id: string; key: string }>(
      `/v1/keys/${keyId}/rotate`,
      { grace_seconds: 600 },
      token,
    );
    if (res.status !== 201) throw new Error(`rotate: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };

  it("refuses the requester's rotated key and the keys it minted; the requester's minter may approve", async () => {
    const { model: m } = await gated();
    const session = await sessionFor(app.http, setup);
    const requester = await mintKey(app.http, setup.org.adminKey, ['org:admin'], 'admin agent');
    const { invocation, approval } = await pausedInvoke(
      app.http,
      requester.key,
      body(session.id, m, 'marker-lineage-1'),
    );
    const minted = await mintKey(app.http, requester.key, ['policies:write'], 'its own approver');
    const rotated = await rotate(setup.org.adminKey, requester.id);
    const grandchild = await mintKey(app.http, rotated.key, ['policies:write'], 'minted by the rotation');
    for (const token of [minted.key, rotated.key, grandchild.key]) {
      const refused = await vote(app.http, token, approval.id, 'approve');
      expect(refused.status).toBe(403);
      expect(refused.body.error_code).toBe('self_approval_forbidden');
    }
    expect(
      (await app.http.get<ApprovalBody>(`/v1/approvals/${approval.id}`, approvers[0])).body.votes,
    ).toEqual([]);
    // The admin key that minted the requester is another identity: the usual human in the loop.
    const byMinter = await vote(app.http, setup.org.adminKey, approval.id, 'approve');
    expect(byMinter.status).toBe(200);
    expect(byMinter.body.status).toBe('approved');
    expect((await finished(app.http, requester.key, invocation.id)).status).toBe('succeeded');
  });

  it('takes the key a signup returned for the person who signed up: their session cannot approve its requests', async () => {
    const { model: m } = await gated();
    const session = await sessionFor(app.http, setup);
    const { invocation, approval } = await pausedInvoke(
      app.http,
      setup.org.adminKey,
      body(session.id, m, 'marker-lineage-bootstrap'),
    );
    const byOwner = await vote(app.http, setup.org.sessionToken, approval.id, 'approve');
    expect(byOwner.status).toBe(403);
    expect(byOwner.body.error_code).toBe('self_approval_forbidden');
    // Every key minted with it stands behind the owner too; another person approves.
    const byTheirKey = await vote(app.http, approvers[0] as string, approval.id, 'approve');
    expect(byTheirKey.body.error_code).toBe('self_approval_forbidden');
    const byColleague = await vote(app.http, await approverSession(), approval.id, 'approve');
    expect(byColleague.body).toMatchObject({ status: 'approved' });
    expect((await finished(app.http, setup.org.adminKey, invocation.id)).status).toBe('succeeded');
  });

  it('counts a key, the keys it minted and its rotations as one approver, whichever votes first', async () => {
    const { model: m } = await gated({ approversRequired: 2 });
    const session = await sessionFor(app.http, setup);
    const { invocation, approval } = await pausedInvoke(
      app.http,
      agentKey,
      body(session.id, m, 'marker-lineage-2'),
    );
    const lead = await mintKey(app.http, setup.org.adminKey, ['org:admin'], 'lead approver');
    const minted = await mintKey(app.http, lead.key, ['policies:write'], 'lead approver, second key');
    expect((await vote(app.http, minted.key, approval.id, 'approve')).body.status).toBe('pending');
    const rotated = await rotate(lead.key, lead.id);
    for (const token of [lead.key, rotated.key]) {
      const again = await vote(app.http, token, approval.id, 'approve');
      expect(again.status).toBe(409);
      expect(again.body.error_code).toBe('conflict');
    }
    expect(requestsFor('marker-lineage-2')).toBe(0);
    const second = await vote(app.http, approvers[0] as string, approval.id, 'approve');
    expect(second.body.status).toBe('approved');
    expect(second.body.votes).toHaveLength(2);
    expect((await finished(app.http, agentKey, invocation.id)).status).toBe('succeeded');
  });

  it('a key and the key it minted voting at the same instant: one vote counts, the other is a conflict', async () => {
    const { model: m } = await gated({ approversRequired: 2 });
    const lead = await mintKey(app.http, setup.org.adminKey, ['org:admin'], 'racing approver');
    const minted = await mintKey(app.http, lead.key, ['policies:write'], 'racing approver, second key');
    for (let round = 0; round < 3; round++) {
      const session = await sessionFor(app.http, setup);
      const marker = `marker-lineage-race-${round}`;
      const { approval } = await pausedInvoke(app.http, agentKey, body(session.id, m, marker));
      const votes = await Promise.all(
        [lead.key, minted.key].map((token) => vote(app.http, token, approval.id, 'approve')),
      );
      expect(votes.map((v) => v.status).sort()).toEqual([200, 409]);
      const after = await app.http.get<ApprovalBody>(`/v1/approvals/${approval.id}`, approvers[0]);
      expect(after.body).toMatchObject({ status: 'pending', votes: [expect.anything()] });
      expect(requestsFor(marker)).toBe(0);
    }
  });
});

describe('each approval resolves exactly once under races', () => {
  it('twelve distinct approvers voting at the same instant: every vote counts', async () => {
    const { model: m } = await gated({ approversRequired: 20 });
    const session = await sessionFor(app.http, setup);
    const { approval } = await pausedInvoke(app.http, agentKey, body(session.id, m, 'marker-twelve'));
    const voters = await approverKeys(app.http, setup.org.adminKey, 12);
    const votes = await Promise.all(voters.map((token) => vote(app.http, token, approval.id, 'approve')));
    expect(votes.map((v) => v.status)).toEqual(voters.map(() => 200));
    const after = await app.http.get<ApprovalBody>(`/v1/approvals/${approval.id}`, approvers[0]);
    expect(after.body).toMatchObject({ status: 'pending' });
    expect(after.body.votes).toHaveLength(12);
    expect(requestsFor('marker-twelve')).toBe(0);
  });

  it('two approvers voting at the same instant: one resolution, one resume, one provider call', async () => {
    const { model: m } = await gated();
    const session = await sessionFor(app.http, setup);
    const { invocation, approval } = await pausedInvoke(app.http, agentKey, body(session.id, m, 'marker-7'));
    const votes = await Promise.all(
      approvers.map((key, i) => vote(app.http, key, approval.id, i === 1 ? 'reject' : 'approve')),
    );
    expect(votes.filter((v) => v.status === 200)).toHaveLength(1);
    expect(votes.filter((v) => v.status === 409).every((v) => v.body.error_code === 'invalid_state')).toBe(
      true,
    );
    const winner = votes.find((v) => v.status === 200)?.body.status as string;
    const done = await finished(app.http, agentKey, invocation.id);
    expect(done.status).toBe(winner === 'approved' ? 'succeeded' : 'denied');
    const entries = await eventually(async () => {
      const found = await auditOf(approval.id);
      return found.some((e) => e.action === `approval.${winner}`) ? found : null;
    });
    expect(
      entries.filter((e) => /^approval\.(approved|rejected|expired|cancelled)$/.test(e.action)),
    ).toHaveLength(1);
    expect(entries.filter((e) => e.action === 'approval.voted')).toHaveLength(1);
    const resumed = (await auditOf(invocation.id)).filter((e) => e.action === 'llm.invoke.resumed');
    expect(resumed).toHaveLength(winner === 'approved' ? 1 : 0);
    expect(requestsFor('marker-7')).toBe(winner === 'approved' ? 1 : 0);
  });

  it('a vote racing the timeout: either the vote or the expiry wins, never both', async () => {
    const { model: m } = await gated({ timeoutSeconds: 1 });
    const session = await sessionFor(app.http, setup);
    const { invocation, approval } = await pausedInvoke(app.http, agentKey, body(session.id, m, 'marker-8'));
    const wait = new Date(approval.expires_at).getTime() - Date.now();
    await new Promise((r) => setTimeout(r, Math.max(0, wait - 5)));
    const res = await vote(app.http, approvers[0] as string, approval.id, 'approve');
    const done = await finished(app.http, agentKey, invocation.id);
    const after = (await app.http.get<ApprovalBody>(`/v1/approvals/${approval.id}`, approvers[0])).body;
    if (res.status === 200) {
      expect(after.status).toBe('approved');
      expect(done.status).toBe('succeeded');
    } else {
      expect(res.body).toMatchObject({ error_code: 'invalid_state', status: 'expired' });
      expect(after.status).toBe('expired');
      expect(done.error?.error_code).toBe('approval_expired');
    }
    const entries = await eventually(async () => {
      const found = await auditOf(approval.id);
      return found.some((e) => e.action === `approval.${after.status}`) ? found : null;
    });
    expect(entries.filter((e) => /^approval\.(approved|expired)$/.test(e.action))).toHaveLength(1);
  });

  it('cancelling the invocation cancels its approval; a vote after it is invalid_state', async () => {
    const { model: m } = await gated();
    const session = await sessionFor(app.http, setup);
    const { invocation, approval } = await pausedInvoke(app.http, agentKey, body(session.id, m, 'marker-9'));
    const cancelled = await app.http.post<{ status: string }>(
      `/v1/llm/invocations/${invocation.id}/cancel`,
      {},
      agentKey,
    );
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.status).toBe('cancelled');
    const after = await app.http.get<ApprovalBody>(`/v1/approvals/${approval.id}`, approvers[0]);
    expect(after.body.status).toBe('cancelled');
    const late = await vote(app.http, approvers[0] as string, approval.id, 'approve');
    expect(late.body).toMatchObject({ error_code: 'invalid_state', status: 'cancelled' });
    expect(requestsFor('marker-9')).toBe(0);
  });

  it('a vote racing a cancel: exactly one of them wins', async () => {
    const { model: m } = await gated();
    const session = await sessionFor(app.http, setup);
    const { invocation, approval } = await pausedInvoke(app.http, agentKey, body(session.id, m, 'marker-10'));
    const [voted, cancelled] = await Promise.all([
      vote(app.http, approvers[0] as string, approval.id, 'approve'),
      app.http.post<{ status: string }>(`/v1/llm/invocations/${invocation.id}/cancel`, {}, agentKey),
    ]);
    expect([voted.status, cancelled.status].sort()).toEqual([200, 409]);
    const done = await finished(app.http, agentKey, invocation.id);
    expect(done.status).toBe(voted.status === 200 ? 'succeeded' : 'cancelled');
    expect(requestsFor('marker-10')).toBe(voted.status === 200 ? 1 : 0);
  });
});

describe('votes are bound to what was asked', () => {
  it('a request changed after the vote is not run (approval_mismatch)', async () => {
    const { model: m } = await gated();
    const session = await sessionFor(app.http, setup);
    const { invocation, approval } = await pausedInvoke(app.http, agentKey, body(session.id, m, 'marker-11'));
    // Someone with database access swaps the prompt while it waits.
    await app.infra.knex.raw(
      `update invocations set request = jsonb_set(request, '{messages,0,content}', '"marker-11 exfiltrate"') where id = ?`,
      [invocation.id],
    );
    expect((await vote(app.http, approvers[0] as string, approval.id, 'approve')).status).toBe(200);
    const done = await finished(app.http, agentKey, invocation.id);
    expect(done).toMatchObject({ status: 'failed', error: { error_code: 'approval_mismatch' }, cost_usd: 0 });
    expect(requestsFor('marker-11')).toBe(0);
  });

  it('caps hold: an approval that resumes after the budget was spent elsewhere ends failed budget_exceeded as the contract says, uncharged', async () => {
    const { model: m } = await gated();
    // 100 output tokens at $2/Mtok: the worst case is about $0.0002; the session fits one.
    const session = await sessionFor(app.http, setup, 0.0003);
    const { invocation, approval } = await pausedInvoke(app.http, agentKey, body(session.id, m, 'marker-12'));
    const spent = await invoke(app.http, agentKey, {
      ...body(session.id, 'free-model', 'spend it'),
      max_tokens: 100,
    });
    expect(spent.body.status).toBe('succeeded');
    expect((await vote(app.http, approvers[0] as string, approval.id, 'approve')).status).toBe(200);
    const done = await finished(app.http, agentKey, invocation.id);
    expect(done).toMatchObject({ status: 'failed', error: { error_code: 'budget_exceeded' }, cost_usd: 0 });
    expect(requestsFor('marker-12')).toBe(0);
    const live = await app.http.get<{ usage: { cost_usd: number; reserved_usd: number } }>(
      `/v1/sessions/${session.id}`,
      setup.org.adminKey,
    );
    expect(live.body.usage.reserved_usd).toBe(0);
    expect(live.body.usage.cost_usd).toBe(spent.body.cost_usd);
  });
});

describe('what operators did while it waited still counts: checked again before the approved request runs', () => {
  /** A paused invocation; `meanwhile` acts on it; then an approval, and how it ended. */
  async function approvedAfter(
    marker: string,
    meanwhile: (ids: { sessionId: string; model: string; agentId: string }) => Promise<unknown>,
    agentId = setup.agentId,
    { withdrawable = false } = {},
  ) {
    const { model: m } = await gated();
    const session = await openSession(app.http, setup.org.adminKey, { agent_id: agentId, max_cost_usd: 1 });
    const { invocation, approval } = await pausedInvoke(app.http, agentKey, body(session.id, m, marker));
    await meanwhile({ sessionId: session.id, model: m, agentId });
    if (withdrawable) await voteUnlessWithdrawn(approval.id);
    else expect((await vote(app.http, approvers[0] as string, approval.id, 'approve')).status).toBe(200);
    const done = await finished(app.http, agentKey, invocation.id);
    const live = await app.http.get<{ usage: { calls: number; cost_usd: number; reserved_usd: number } }>(
      `/v1/sessions/${session.id}`,
      setup.org.adminKey,
    );
    return { done, usage: live.body.usage };
  }

  it('a session closed meanwhile: failed session_not_open, the provider never called, nothing charged', async () => {
    // In the database, as a close whose own withdrawal did not happen or came after the vote.
    const { done, usage } = await approvedAfter(
      'marker-13',
      ({ sessionId }) =>
        app.infra
          .knex('sessions')
          .where({ id: sessionId })
          .update({ status: 'closed', closed_at: new Date() }),
      setup.agentId,
      { withdrawable: true },
    );
    expect(done).toMatchObject({ status: 'failed', error: { error_code: 'session_not_open' }, cost_usd: 0 });
    expect(requestsFor('marker-13')).toBe(0);
    expect(usage).toMatchObject({ calls: 0, cost_usd: 0, reserved_usd: 0 });
  });

  it('a session expired meanwhile: failed session_not_open, never called, nothing charged', async () => {
    const { model: m } = await gated();
    const session = await sessionFor(app.http, setup);
    const { invocation, approval } = await pausedInvoke(app.http, agentKey, body(session.id, m, 'marker-17'));
    await app.infra
      .knex('sessions')
      .where({ id: session.id })
      .update({ expires_at: new Date(Date.now() - 1000) });
    await voteUnlessWithdrawn(approval.id);
    const done = await finished(app.http, agentKey, invocation.id);
    expect(done).toMatchObject({ status: 'failed', error: { error_code: 'session_not_open' }, cost_usd: 0 });
    expect(requestsFor('marker-17')).toBe(0);
    const live = await app.http.get<{ usage: { calls: number; reserved_usd: number } }>(
      `/v1/sessions/${session.id}`,
      setup.org.adminKey,
    );
    expect(live.body.usage).toMatchObject({ calls: 0, reserved_usd: 0 });
  });

  it('a deny policy added meanwhile: denied guardian_denied (deny beats an approval), never called', async () => {
    const { done, usage } = await approvedAfter('marker-14', ({ model: m }) =>
      app.http.post(
        '/v1/policies',
        { name: `stop ${m}`, rules: [{ type: 'deny_models', models: [m] }] },
        setup.org.adminKey,
      ),
    );
    expect(done).toMatchObject({ status: 'denied', error: { error_code: 'guardian_denied' }, cost_usd: 0 });
    expect(done.error?.message).toContain('denied after its approval');
    expect(requestsFor('marker-14')).toBe(0);
    expect(usage).toMatchObject({ calls: 0, cost_usd: 0, reserved_usd: 0 });
  });

  it('its agent suspended meanwhile: denied guardian_denied naming the suspension, never called', async () => {
    const agent = await app.http.post<{ id: string }>(
      '/v1/agents',
      {
        name: 'suspended-later',
        allowed_models: Array.from({ length: 40 }, (_, i) => `gated-${i + 1}`),
        credential_refs: [setup.credentialRef],
      },
      setup.org.adminKey,
    );
    const { done } = await approvedAfter(
      'marker-15',
      ({ agentId }) => app.http.post(`/v1/agents/${agentId}/suspend`, {}, setup.org.adminKey),
      agent.body.id,
    );
    expect(done).toMatchObject({ status: 'denied', error: { error_code: 'guardian_denied' }, cost_usd: 0 });
    expect(done.error?.message).toContain('suspended');
    expect(requestsFor('marker-15')).toBe(0);
  });

  it('a policy that would hold it again does not: the approved request runs once', async () => {
    const { done } = await approvedAfter('marker-16', async () => undefined);
    expect(done).toMatchObject({ status: 'succeeded' });
    expect(requestsFor('marker-16')).toBe(1);
  });
});

describe('the approvals routes', () => {
  it('lists newest first with filters and a cursor that pages without gaps or repeats; another org sees nothing', async () => {
    const { model: m, policyId } = await gated();
    const session = await sessionFor(app.http, setup);
    const first = await pausedInvoke(app.http, agentKey, body(session.id, m, 'marker-13a'));
    const second = await pausedInvoke(app.http, agentKey, body(session.id, m, 'marker-13b'));
    const third = await pausedInvoke(app.http, agentKey, body(session.id, m, 'marker-13c'));
    type Page = { data: ApprovalBody[]; next_cursor: string | null };
    const page1 = await app.http.get<Page>(
      `/v1/approvals?status=pending&session_id=${session.id}&policy_id=${policyId}&limit=1`,
      approvers[0],
    );
    expect(page1.status).toBe(200);
    expect(page1.body.data.map((a) => a.id)).toEqual([third.approval.id]);
    expect(page1.body.data[0]?.summary.messages).toBeUndefined();
    const seen = page1.body.data.map((a) => a.id);
    let cursor = page1.body.next_cursor;
    while (cursor !== null) {
      const page = await app.http.get<Page>(
        `/v1/approvals?status=pending&session_id=${session.id}&limit=1&cursor=${cursor}`,
        approvers[0],
      );
      expect(page.status).toBe(200);
      seen.push(...page.body.data.map((a) => a.id));
      cursor = page.body.next_cursor;
      expect(seen.length).toBeLessThanOrEqual(3);
    }
    expect(seen).toEqual([third.approval.id, second.approval.id, first.approval.id]);
    const whole = await app.http.get<Page>(`/v1/approvals?session_id=${session.id}`, approvers[0]);
    expect(whole.body.data.map((a) => a.id)).toEqual(seen);
    expect(whole.body.next_cursor).toBeNull();
    const byAgent = await app.http.get<{ data: ApprovalBody[] }>(
      `/v1/approvals?agent_id=agt_none`,
      approvers[0],
    );
    expect(byAgent.body.data).toEqual([]);
    const bad = await app.http.get(`/v1/approvals?status=maybe`, approvers[0]);
    expect(bad.status).toBe(400);

    const other = await setUpInvoking(app.http);
    const hidden = await app.http.get(`/v1/approvals/${first.approval.id}`, other.org.adminKey);
    expect(hidden.status).toBe(404);
    const otherVote = await vote(app.http, other.org.adminKey, first.approval.id, 'approve');
    expect(otherVote.status).toBe(404);
    const otherList = await app.http.get<{ data: unknown[] }>('/v1/approvals', other.org.adminKey);
    expect(otherList.body.data).toEqual([]);
  });
});
