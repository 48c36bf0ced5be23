import { stoppedAfterWait } from '../../domain/invocations/resume-checks';
import { SLOW_DECISION_MS } from '../../domain/invocations/slow-decision';
import type { GuardianView, InvocationStore } from '../../domain/invocations/invocation-store';
import { allowed, Guardian } from '../../domain/policy/guardian';
import { invocationRow, sealedCredential } from '../support/invocation-row';

/** The checks before a retry, an approved run or a restarted one, when the guardian's decision is slow. */
const start = new Date('2026-11-28T12:00:00Z').getTime();
const invocation = invocationRow({ agentId: 'agt_1', createdAt: new Date(start) });
const view: GuardianView = {
  invocation,
  agent: { id: 'agt_1', status: 'active', allowedModels: ['m'], credentialRefs: ['cred_1'] },
  session: { status: 'open', expiresAt: new Date(start + 3_600_000) },
  policyVersion: 1,
  credential: sealedCredential,
  requesterRevokedAt: null,
  requesterExpiresAt: null,
};

/** A store whose answers change once the guardian has started deciding, and a guardian that takes `ms`. */
function deps(ms: number, meanwhile: Partial<GuardianView>) {
  let at = start;
  let decided = false;
  let reads = 0;
  const store = {
    forGuardian: async () => (reads++, decided ? { ...view, ...meanwhile } : view),
  } as unknown as InvocationStore;
  const guardian = new Guardian({
    evaluate: async () => {
      at += ms;
      decided = true;
      return allowed();
    },
  });
  return { deps: { store, guardian, clock: { now: () => new Date(at) } }, reads: () => reads };
}

it('stops a retry whose key was revoked while its slow decision waited: failed invalid_api_key', async () => {
  const { deps: d, reads } = deps(SLOW_DECISION_MS, { requesterRevokedAt: new Date(start + 10) });
  expect(await stoppedAfterWait(d, invocation, 'retry')).toMatchObject({
    status: 'failed',
    error: { errorCode: 'invalid_api_key' },
  });
  expect(reads()).toBe(2);
});

it('stops an approved run whose session closed while its slow decision waited: failed session_not_open', async () => {
  const { deps: d } = deps(3_000, { session: { status: 'closed', expiresAt: view.session.expiresAt } });
  expect(await stoppedAfterWait(d, invocation, 'approval')).toMatchObject({
    status: 'failed',
    error: { errorCode: 'session_not_open' },
  });
});

it('reads nothing again after a fast decision, and lets the call go', async () => {
  const { deps: d, reads } = deps(SLOW_DECISION_MS - 1, { requesterRevokedAt: new Date(start) });
  expect(await stoppedAfterWait(d, invocation, 'restart')).toBeNull();
  expect(reads()).toBe(1);
});

it('stops an approved run whose credential was deleted while it waited: failed credential_not_found', async () => {
  const gone = { ...sealedCredential, sealedSecret: null };
  const { deps: d } = deps(3_000, { credential: gone });
  expect(await stoppedAfterWait(d, invocation, 'approval')).toMatchObject({
    status: 'failed',
    error: { errorCode: 'credential_not_found', details: { credential_ref: invocation.credentialRef } },
  });
});
