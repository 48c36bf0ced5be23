import { appWithPausedApprovals } from '../support/paused-approvals';
import { mintKey } from '../support/factories';
import { type InvocationBody, type InvokeSetup } from '../support/invoke-fixtures';
import { pausedInvoke, sessionFor, type ApprovalBody } from '../support/approval-fixtures';
import { type TestApp } from '../support/test-app';

/**
 * An approval past its time while no worker runs (so neither its delayed job nor the sweep has
 * recorded it): it reads as expired, leaves the pending queue, and a cancel of its invocation
 * expires it (the agent is told of a timeout, as the contract says) instead of cancelling it.
 */
let api: TestApp;
let setup: InvokeSetup;
let agentKey: string;

beforeAll(async () => {
  ({ api, setup } = await appWithPausedApprovals(async (app, s) => {
    agentKey = (await mintKey(app.http, s.org.adminKey, ['llm:invoke', 'sessions:read', 'policies:read']))
      .key;
    const session = await sessionFor(app.http, s);
    const paused = () =>
      pausedInvoke(app.http, agentKey, {
        session_id: session.id,
        model: 'gated',
        messages: [{ role: 'user', content: 'deploy' }],
        max_tokens: 10,
      });
    overdue = (await paused()).approval;
    readLater = (await paused()).approval;
    chatLater = (await paused()).approval;
  }));
  // Their time is up, and nothing is left to record it.
  await api.infra
    .knex('approvals')
    .whereIn('id', [overdue.id, readLater.id, chatLater.id])
    .update({ expires_at: new Date(Date.now() - 1000) });
}, 60_000);
afterAll(() => api.close());

let overdue: ApprovalBody;
let readLater: ApprovalBody;
let chatLater: ApprovalBody;

const listed = async (status: string) =>
  (
    await api.http.get<{ data: { id: string; status: string }[] }>(
      `/v1/approvals?status=${status}`,
      setup.org.adminKey,
    )
  ).body.data;

it('reads as expired, in the expired list and not the pending queue, before anything recorded it', async () => {
  const read = await api.http.get<ApprovalBody>(`/v1/approvals/${overdue.id}`, setup.org.adminKey);
  expect(read.body).toMatchObject({ id: overdue.id, status: 'expired', resolved_at: null });
  expect((await listed('pending')).map((a) => a.id)).not.toContain(overdue.id);
  expect(await listed('expired')).toEqual(
    expect.arrayContaining([expect.objectContaining({ id: overdue.id, status: 'expired' })]),
  );
  const [row] = await api.infra.knex('approvals').where({ id: overdue.id });
  expect(row.status).toBe('pending');
});

it('a cancel of its invocation expires it: 409, the invocation denied with approval_expired', async () => {
  const cancel = await api.http.call<{ error_code: string }>(
    'POST',
    `/v1/llm/invocations/${overdue.invocation_id}/cancel`,
    { token: agentKey },
  );
  expect(cancel.status).toBe(409);
  expect(cancel.body.error_code).toBe('invalid_state');
  const approval = await api.http.get<ApprovalBody>(`/v1/approvals/${overdue.id}`, setup.org.adminKey);
  expect(approval.body.status).toBe('expired');
  expect(approval.body.resolved_at).not.toBeNull();
  const invocation = await api.http.get<InvocationBody>(
    `/v1/llm/invocations/${overdue.invocation_id}`,
    agentKey,
  );
  expect(invocation.body).toMatchObject({ status: 'denied', error: { error_code: 'approval_expired' } });
});

it('a read of its invocation expires it: denied with approval_expired, not left awaiting approval', async () => {
  const read = await api.http.get<InvocationBody>(`/v1/llm/invocations/${readLater.invocation_id}`, agentKey);
  expect(read.body).toMatchObject({ status: 'denied', error: { error_code: 'approval_expired' } });
  const approval = await api.http.get<ApprovalBody>(`/v1/approvals/${readLater.id}`, setup.org.adminKey);
  expect(approval.body).toMatchObject({ status: 'expired', resolved_at: expect.any(String) });
});

it('a chat resume of its invocation is told approval_expired (403), not approval_pending', async () => {
  const resumed = await api.http.call<{ error: { code: string } }>('POST', '/v1/chat/completions', {
    token: agentKey,
    body: { model: 'gated', messages: [{ role: 'user', content: 'deploy' }], max_tokens: 10 },
    headers: { 'X-Invocation-Id': chatLater.invocation_id },
  });
  expect(resumed.status).toBe(403);
  expect(resumed.body.error.code).toBe('approval_expired');
});
