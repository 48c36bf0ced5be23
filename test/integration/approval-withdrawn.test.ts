import { appWithPausedApprovals } from '../support/paused-approvals';
import { mintKey } from '../support/factories';
import { openSession, type InvocationBody, type InvokeSetup } from '../support/invoke-fixtures';
import { approverKeys, pausedInvoke, sessionFor, type ApprovalBody } from '../support/approval-fixtures';
import { type TestApp } from '../support/test-app';
import { sweepApprovals } from '../../workers/approval-processors';
import { withdrawStranded } from '../../domain/approvals/withdraw-stranded';
import { approvalDeps } from '../../infra/approvals/approval-deps';

/**
 * An approval whose invocation can no longer run (its session closed or expired, the key that
 * asked revoked or expired) is withdrawn: approvers are not asked about work no one can use. A
 * close or a revocation withdraws at once; the approvals sweep withdraws what expired meanwhile.
 * No worker runs once the approvals exist, so nothing but the call under test moves them.
 */
let api: TestApp;
let setup: InvokeSetup;
let approver: string;

/** One paused invocation per case, each in its own session and under its own requesting key. */
type Paused = { approval: ApprovalBody; sessionId: string; key: { id: string; key: string } };
const CASES = [
  'closed',
  'revoked',
  'rotated',
  'expired',
  'keyExpired',
  'credential',
  'credentialLost',
  'live',
  'many',
  'many',
  'many',
] as const;
const paused: Record<(typeof CASES)[number], Paused> = {} as never;
/** The three approvals paused in one session (the case `many`). */
const many: Paused[] = [];

beforeAll(async () => {
  ({ api, setup } = await appWithPausedApprovals(async (app, s) => {
    [approver] = (await approverKeys(app.http, s.org.adminKey, 1)) as [string];
    let manySession: string | undefined;
    for (const name of CASES) {
      const key = await mintKey(
        app.http,
        s.org.adminKey,
        ['llm:invoke', 'sessions:read', 'policies:read'],
        name,
      );
      const session =
        name === 'many' && manySession
          ? { id: manySession }
          : name.startsWith('credential')
            ? await sessionWithOwnCredential(app, s, name)
            : await sessionFor(app.http, s);
      if (name === 'many') manySession = session.id;
      const body = {
        session_id: session.id,
        model: 'gated',
        messages: [{ role: 'user', content: `deploy ${name}` }],
        max_tokens: 10,
      };
      const { approval } = await pausedInvoke(app.http, key.key, body);
      paused[name] = { approval, sessionId: session.id, key };
      if (name === 'many') many.push(paused[name]);
    }
  }));
}, 90_000);
afterAll(() => api.close());

/** The credential each `credential…` case's invocation runs with, its agent's only one. */
const credentialOf: Record<string, string> = {};

async function sessionWithOwnCredential(app: TestApp, s: InvokeSetup, name: string) {
  const http = app.http;
  const stored = await http.post<{ credential_ref: string }>(
    '/v1/credentials',
    { name, provider: 'mock', secret: `mock-secret-${name}` },
    s.org.adminKey,
  );
  credentialOf[name] = stored.body.credential_ref;
  const agent = await http.post<{ id: string }>(
    '/v1/agents',
    { name, allowed_models: ['gated'], credential_refs: [stored.body.credential_ref] },
    s.org.adminKey,
  );
  return openSession(http, s.org.adminKey, { agent_id: agent.body.id, max_cost_usd: 1 });
}

const approvalOf = async (p: Paused) =>
  (await api.http.get<ApprovalBody>(`/v1/approvals/${p.approval.id}`, setup.org.adminKey)).body;
const invocationOf = async (p: Paused) =>
  (await api.http.get<InvocationBody>(`/v1/llm/invocations/${p.approval.invocation_id}`, setup.org.adminKey))
    .body;
const auditOf = async (resourceId: string) =>
  (
    await api.http.get<{
      data: { action: string; actor: { id: string }; details: Record<string, unknown> }[];
    }>(`/v1/audit?resource_id=${resourceId}`, setup.org.adminKey)
  ).body.data;

/** Withdrawn: the approval cancelled, the invocation failed with `errorCode`, charged nothing. */
async function expectWithdrawn(p: Paused, errorCode: string, actorId: string) {
  expect(await approvalOf(p)).toMatchObject({ status: 'cancelled', resolved_at: expect.any(String) });
  const invocation = await invocationOf(p);
  expect(invocation).toMatchObject({ status: 'failed', error: { error_code: errorCode }, cost_usd: 0 });
  expect(invocation.error?.message).toContain('its approval was withdrawn');
  const [entry] = (await auditOf(p.approval.id)).filter((e) => e.action === 'approval.cancelled');
  expect(entry).toMatchObject({ actor: { id: actorId }, details: { reason: errorCode } });
  const [last] = (await auditOf(p.approval.invocation_id)).filter((e) => e.action === 'llm.invoke.failed');
  // With the invocation's totals, as every invocation's last entry (QA: only ids).
  expect(last?.details).toMatchObject({
    session_id: p.sessionId,
    cost_usd: 0,
    calls: 0,
    error_code: errorCode,
  });
  const vote = await api.http.post<{ error_code: string }>(
    `/v1/approvals/${p.approval.id}/approve`,
    {},
    approver,
  );
  expect(vote.status).toBe(409);
  expect(vote.body.error_code).toBe('invalid_state');
}

it("closing a session withdraws its invocations' approvals at once, in the closer's name", async () => {
  const closed = await api.http.post(`/v1/sessions/${paused.closed.sessionId}/close`, {}, setup.org.adminKey);
  expect(closed.status).toBe(200);
  await expectWithdrawn(paused.closed, 'session_not_open', setup.org.adminKeyId);
  const queue = await api.http.get<{ data: { id: string }[] }>('/v1/approvals?status=pending', approver);
  expect(queue.body.data.map((a) => a.id)).not.toContain(paused.closed.approval.id);
});

it('revoking the key that asked withdraws its approvals at once', async () => {
  const revoked = await api.http.call('DELETE', `/v1/keys/${paused.revoked.key.id}`, {
    token: setup.org.adminKey,
  });
  expect(revoked.status).toBe(200);
  await expectWithdrawn(paused.revoked, 'invalid_api_key', setup.org.adminKeyId);
});

it('the approvals sweep withdraws those whose session or key expired meanwhile, and no other', async () => {
  const past = new Date(Date.now() - 1000);
  await api.infra.knex('sessions').where({ id: paused.expired.sessionId }).update({ expires_at: past });
  await api.infra.knex('api_keys').where({ id: paused.keyExpired.key.id }).update({ expires_at: past });
  expect(await sweepApprovals(api.infra)).toMatchObject({ withdrawn: 2 });
  await expectWithdrawn(paused.expired, 'session_not_open', 'system');
  await expectWithdrawn(paused.keyExpired, 'expired_api_key', 'system');
  // Nothing left to withdraw: a second sweep finds none, and the live approval still waits.
  expect(await sweepApprovals(api.infra)).toMatchObject({ withdrawn: 0 });
  expect(await approvalOf(paused.live)).toMatchObject({ status: 'pending', resolved_at: null });
  expect((await invocationOf(paused.live)).status).toBe('awaiting_approval');
});

it('rotating the key that asked without a grace withdraws its approvals at once, as a revocation (QA)', async () => {
  const rotated = await api.http.post(`/v1/keys/${paused.rotated.key.id}/rotate`, {}, setup.org.adminKey);
  expect(rotated.status).toBe(201);
  await expectWithdrawn(paused.rotated, 'invalid_api_key', setup.org.adminKeyId);
});

it('withdraws a batch at a time until none is left (QA: a close withdrew only its first 100)', async () => {
  const [first] = many as [Paused];
  await api.infra
    .knex('sessions')
    .where({ id: first.sessionId })
    .update({ status: 'closed', closed_at: new Date() });
  const scope = { orgId: setup.org.orgId, sessionId: first.sessionId };
  const actor = { type: 'api_key' as const, id: setup.org.adminKeyId };
  expect(await withdrawStranded(approvalDeps(api.infra), actor, null, scope, { batch: 2 })).toBe(3);
  for (const p of many) expect((await approvalOf(p)).status).toBe('cancelled');
  expect(await approvalOf(paused.live)).toMatchObject({ status: 'pending' });
});

it('deleting a credential withdraws the approvals of invocations that would run with it (QA)', async () => {
  const ref = credentialOf.credential as string;
  const deleted = await api.http.call('DELETE', `/v1/credentials/${ref}`, { token: setup.org.adminKey });
  expect(deleted.status).toBe(204);
  await expectWithdrawn(paused.credential, 'credential_not_found', setup.org.adminKeyId);
  expect((await invocationOf(paused.credential)).error?.message).toContain(`credential ${ref} was deleted`);
  expect(await approvalOf(paused.live)).toMatchObject({ status: 'pending' });
});

it('the approvals sweep withdraws those whose credential was deleted without a withdrawal', async () => {
  // As if the process that deleted it died before withdrawing.
  const ref = credentialOf.credentialLost as string;
  await api.infra.knex('credentials').where({ ref }).update({ sealed_secret: null, deleted_at: new Date() });
  expect(await sweepApprovals(api.infra)).toMatchObject({ withdrawn: 1 });
  await expectWithdrawn(paused.credentialLost, 'credential_not_found', 'system');
  expect(await approvalOf(paused.live)).toMatchObject({ status: 'pending' });
});
