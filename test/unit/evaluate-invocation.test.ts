import { requestDigest } from '../../domain/approvals/request-digest';
import { worstCase } from '../../domain/budget/charges';
import { allowed, Guardian, type GuardianVerdict } from '../../domain/policy/guardian';
import {
  decideInvocation,
  evaluateInvocation,
  type EvaluateDeps,
} from '../../domain/invocations/evaluate-invocation';
import type { Invocation } from '../../domain/invocations/invocation';
import type {
  DecisionWrite,
  FinishWrite,
  GuardianView,
  InvocationStore,
} from '../../domain/invocations/invocation-store';
import type { InvocationStage } from '../../domain/invocations/signals';
import { REDECISIONS, SLOW_DECISION_MS } from '../../domain/invocations/slow-decision';
import { invocationRow, sealedCredential } from '../support/invocation-row';

const now = new Date('2026-11-22T12:00:00Z');
const price = { inputMicrosPerMtok: 1_000_000, outputMicrosPerMtok: 2_000_000 };
const messages = [{ role: 'user' as const, content: 'x'.repeat(50) }];

const invocation: Invocation = invocationRow({
  agentId: 'agt_1',
  request: { messages, maxTokens: 1000 },
  price,
  reservation: { costMicros: worstCase(messages, 1000, price).costMicros, tokens: 0 },
  createdAt: now,
});

/** In-memory fakes of the ports the guardian stage uses (unit tests only). */
function fakes(
  verdict: GuardianVerdict,
  credentialRefs = ['cred_1'],
  row: Partial<Invocation> = {},
  requesterRevokedAt: Date | null = null,
) {
  const decisions: DecisionWrite[] = [];
  const finishes: FinishWrite[] = [];
  const enqueued: InvocationStage[] = [];
  const timers: { id: string; expiresAt: Date }[] = [];
  const view: GuardianView = {
    invocation: { ...invocation, ...row },
    agent: { id: 'agt_1', status: 'active', allowedModels: ['m'], credentialRefs },
    session: { status: 'open', expiresAt: new Date(now.getTime() + 60_000) },
    policyVersion: 3,
    credential,
    requesterRevokedAt,
    requesterExpiresAt: null,
  };
  const store = {
    forGuardian: async () => view,
    decide: async (w: DecisionWrite) => (decisions.push(w), 'applied' as const),
    finish: async (w: FinishWrite) => (finishes.push(w), 'applied' as const),
  } as unknown as InvocationStore;
  const deps: EvaluateDeps = {
    store,
    queue: {
      submit: async () => undefined,
      enqueue: async (stage) => void enqueued.push(stage),
      state: async () => 'alive',
      requeue: async () => undefined,
    },
    signal: { finished: async () => undefined },
    guardian: new Guardian({ evaluate: async () => verdict }),
    timers: { expireAt: async (a) => void timers.push({ id: a.id, expiresAt: a.expiresAt }) },
    clock: { now: () => now },
  };
  return { deps, decisions, finishes, enqueued, timers };
}

const credential = sealedCredential;

const allow = allowed();

const job = { invocationId: 'inv_1', orgId: 'org_1', trace: {} };
/** The invoke job an admitted invocation goes on in. */
const next = { invocation_id: 'inv_1', org_id: 'org_1', trace: {} };

describe('the guardian stage', () => {
  it('runs a modify verdict as modified: new request, new worst case reserved, then the invoke queue', async () => {
    const smaller = [{ role: 'user' as const, content: '[redacted]' }];
    const { deps, decisions, enqueued } = fakes({
      verdict: 'modify',
      reasons: [{ policyId: 'pol_1', code: 'max_tokens', message: 'clamped' }],
      shadowReasons: [],
      modifiedAction: {
        type: 'llm.invoke',
        model: 'm',
        messages: smaller,
        maxTokens: 100,
        estimatedCostUsd: 0,
      },
      approval: null,
      policyVersion: 3,
    });
    expect(await evaluateInvocation(deps, job)).toBe('admitted');
    const write = decisions[0] as DecisionWrite;
    expect(write.status).toBe('running');
    expect(write.request).toEqual({ messages: smaller, maxTokens: 100 });
    expect(write.reservation).toEqual(worstCase(smaller, 100, price));
    expect(write.decision).toMatchObject({ verdict: 'modify', policyVersion: 3 });
    expect(write.events.map((e) => e.action)).toEqual(['llm.invoke.allowed']);
    expect(enqueued).toEqual(['invocation.run']);
    // What the invoke stage runs without reading the row again: the row as the decision wrote it.
    const decided = await decideInvocation(deps, job);
    const rewrite = decisions[1] as DecisionWrite;
    expect(decided).toEqual({
      outcome: 'admitted',
      next,
      run: {
        invocation: {
          ...invocation,
          status: 'running',
          request: { messages: smaller, maxTokens: 100 },
          reservation: { costMicros: write.reservation?.costMicros, tokens: write.reservation?.tokens },
          decision: { id: rewrite.decision.id, verdict: 'modify', reasons: rewrite.decision.reasons },
          updatedAt: now,
        },
        credential,
        approvedDigest: null,
      },
      decidedNow: true,
    });
  });

  it('pauses on require_approval: awaiting_approval, an approval bound to the request, its expiry scheduled', async () => {
    const redacted = [{ role: 'user' as const, content: '[key]' }];
    const { deps, decisions, enqueued, timers } = fakes({
      verdict: 'require_approval',
      reasons: [{ policyId: 'pol_2', code: 'approval_required', message: 'a human must approve' }],
      shadowReasons: [],
      modifiedAction: {
        type: 'llm.invoke',
        model: 'm',
        messages: redacted,
        maxTokens: 1000,
        estimatedCostUsd: 0,
      },
      approval: { policyId: 'pol_2', approversRequired: 2, timeoutSeconds: 60 },
      policyVersion: 7,
    });
    expect(await evaluateInvocation(deps, job)).toBe('awaiting_approval');
    const write = decisions[0] as DecisionWrite;
    expect(write.status).toBe('awaiting_approval');
    expect(write.error).toBeNull();
    expect(write.request).toEqual({ messages: redacted, maxTokens: 1000 });
    expect(write.approval).toMatchObject({
      status: 'pending',
      invocationId: 'inv_1',
      policyId: 'pol_2',
      policyVersion: 7,
      approversRequired: 2,
      requestedBy: { type: 'api_key', id: 'key_1' },
      expiresAt: new Date(now.getTime() + 60_000),
      requestDigest: requestDigest(invocation, { messages: redacted, maxTokens: 1000 }),
    });
    // Written with the decision: webhooks are fed approval.requested from this entry.
    expect(write.events.map((e) => e.action)).toEqual(['llm.invoke.awaiting_approval', 'approval.requested']);
    expect(timers).toEqual([{ id: write.approval?.id, expiresAt: write.approval?.expiresAt }]);
    expect(enqueued).toEqual([]);
  });

  it("denies an invocation whose credential is not in its agent's credential_refs, and never runs it", async () => {
    const { deps, decisions, enqueued } = fakes(allow, ['cred_2']);
    expect(await evaluateInvocation(deps, job)).toBe('denied');
    const write = decisions[0] as DecisionWrite;
    expect(write.status).toBe('denied');
    expect(write.decision.reasons.map((r) => r.code)).toEqual(['credential_not_allowed']);
    expect(write.error?.errorCode).toBe('guardian_denied');
    expect(enqueued).toEqual([]);
  });

  it('hands one its own earlier attempt admitted to the run as read, deciding nothing again', async () => {
    const running = { status: 'running' as const, providerAttempts: 1 };
    const { deps, decisions, enqueued } = fakes(allow, ['cred_1'], running);
    expect(await evaluateInvocation(deps, job)).toBe('admitted');
    expect(decisions).toEqual([]);
    expect(enqueued).toEqual(['invocation.run']);
    expect(await decideInvocation(deps, job)).toEqual({
      outcome: 'admitted',
      next,
      run: { invocation: { ...invocation, ...running }, credential, approvedDigest: null },
      decidedNow: false,
    });
  });

  it('leaves one an approval resumed to the invoke job the approval enqueued (no row handed over)', async () => {
    const resumed = { status: 'running' as const, approvalId: 'apr_1' };
    const { deps, decisions, enqueued } = fakes(allow, ['cred_1'], resumed);
    expect(await evaluateInvocation(deps, job)).toBe('admitted');
    expect(decisions).toEqual([]);
    expect(enqueued).toEqual(['invocation.run']);
    expect(await decideInvocation(deps, job)).toEqual({
      outcome: 'admitted',
      next,
      run: null,
      decidedNow: false,
    });
  });

  it('fails a queued invocation whose key was revoked meanwhile (invalid_api_key), deciding nothing', async () => {
    const revoked = new Date(now.getTime() - 1000);
    const { deps, decisions, finishes, enqueued } = fakes(allow, ['cred_1'], {}, revoked);
    expect(await evaluateInvocation(deps, job)).toBe('failed');
    expect(decisions).toEqual([]);
    expect(enqueued).toEqual([]);
    expect(finishes[0]).toMatchObject({ status: 'failed', error: { errorCode: 'invalid_api_key' } });
  });

  /**
   * A guardian that takes `ms` on the clock (a heavy evaluation waiting for its thread) while
   * `meanwhile` changes what the store answers next.
   */
  function slowGuardian(deps: EvaluateDeps, ms: number, meanwhile: (view: GuardianView) => GuardianView) {
    let at = now.getTime();
    const reads: GuardianView[] = [];
    const store = deps.store as { forGuardian: (id: string) => Promise<GuardianView | null> };
    const read = store.forGuardian.bind(store);
    let changed = false;
    store.forGuardian = async (id) => {
      const view = (await read(id)) as GuardianView;
      const answer = changed ? meanwhile(view) : view;
      reads.push(answer);
      return answer;
    };
    deps.clock = { now: () => new Date(at) };
    deps.guardian = new Guardian({
      evaluate: async () => {
        at += ms;
        changed = true;
        return allow;
      },
    });
    return reads;
  }

  it('reads the session and key again after a slow decision: a key revoked meanwhile fails it, deciding nothing', async () => {
    const { deps, decisions, finishes, enqueued } = fakes(allow);
    const reads = slowGuardian(deps, SLOW_DECISION_MS, (v) => ({
      ...v,
      requesterRevokedAt: new Date(now.getTime() + 1),
    }));
    expect(await evaluateInvocation(deps, job)).toBe('failed');
    expect(reads).toHaveLength(2);
    expect(decisions).toEqual([]);
    expect(enqueued).toEqual([]);
    expect(finishes[0]).toMatchObject({ status: 'failed', error: { errorCode: 'invalid_api_key' } });
  });

  it('a session closed during a slow decision fails it session_not_open; a fast one is not read again', async () => {
    const slow = fakes(allow);
    slowGuardian(slow.deps, 5_000, (v) => ({ ...v, session: { ...v.session, status: 'closed' } }));
    expect(await evaluateInvocation(slow.deps, job)).toBe('failed');
    expect(slow.finishes[0]).toMatchObject({ status: 'failed', error: { errorCode: 'session_not_open' } });

    const fast = fakes(allow);
    const reads = slowGuardian(fast.deps, SLOW_DECISION_MS - 1, (v) => ({ ...v, requesterRevokedAt: now }));
    expect(await evaluateInvocation(fast.deps, job)).toBe('admitted');
    expect(reads).toHaveLength(1);
  });

  describe('what the verdict was reached on changed before it was recorded (QA)', () => {
    const deny: GuardianVerdict = {
      ...allow,
      verdict: 'deny',
      reasons: [{ policyId: 'pol_late', code: 'deny_model', message: 'denied by a late policy' }],
    };

    /** A guardian whose engine answers `verdicts` in turn, each taking 5 s on the clock (slow). */
    function changingWhileSlow(
      deps: EvaluateDeps,
      verdicts: GuardianVerdict[],
      change: (v: GuardianView) => GuardianView,
    ) {
      const calls: GuardianView['agent'][] = [];
      slowGuardian(deps, 5_000, change);
      const slow = deps.guardian;
      let turn = 0;
      deps.guardian = new Guardian({
        evaluate: async (input) => {
          calls.push(input.agent);
          await slow.decide(input);
          return verdicts[Math.min(turn++, verdicts.length - 1)] as GuardianVerdict;
        },
      });
      return calls;
    }

    it('a policy added during a slow decision: decided again, on the new policies, and denied', async () => {
      const { deps, decisions, enqueued } = fakes(allow);
      const calls = changingWhileSlow(deps, [allow, deny], (v) => ({ ...v, policyVersion: 4 }));
      expect(await evaluateInvocation(deps, job)).toBe('denied');
      expect(calls).toHaveLength(2);
      expect(decisions.map((d) => d.decision.verdict)).toEqual(['deny']);
      expect(enqueued).toEqual([]);
    });

    it('an agent suspended during a slow decision: decided again, on the agent as it is, and denied', async () => {
      const { deps, decisions } = fakes(allow);
      slowGuardian(deps, 5_000, (v) => ({ ...v, agent: v.agent && { ...v.agent, status: 'suspended' } }));
      expect(await evaluateInvocation(deps, job)).toBe('denied');
      expect(decisions[0]?.decision.reasons[0]?.code).toBe('agent_suspended');
    });

    it('under changes that never stop, decides again at most REDECISIONS times', async () => {
      const { deps, decisions } = fakes(allow);
      let version = 3;
      const calls = changingWhileSlow(deps, [allow], (v) => ({ ...v, policyVersion: ++version }));
      expect(await evaluateInvocation(deps, job)).toBe('admitted');
      expect(calls).toHaveLength(1 + REDECISIONS);
      expect(decisions).toHaveLength(1);
    });

    it('a prior verdict (reached before the row existed) is recorded as it is while what it was reached on stands', async () => {
      const same = fakes(deny);
      const view = (await same.deps.store.forGuardian('inv_1')) as GuardianView;
      const evaluate = jest.fn(async () => allow);
      same.deps.guardian = new Guardian({ evaluate });
      const prior = { verdict: { ...allow, policyVersion: 3 }, at: now, decidedOn: view };
      expect((await decideInvocation(same.deps, job, prior)).outcome).toBe('admitted');
      expect(evaluate).not.toHaveBeenCalled();

      // Reached on policy_version 2, and on the agent before its models were narrowed: decided again.
      for (const decidedOn of [
        { ...view, policyVersion: 2 },
        { ...view, agent: view.agent && { ...view.agent, allowedModels: ['m', 'other'] } },
      ]) {
        const changed = fakes(allow);
        const again = jest.fn(async () => deny);
        changed.deps.guardian = new Guardian({ evaluate: again });
        const older = { verdict: { ...allow, policyVersion: decidedOn.policyVersion }, at: now, decidedOn };
        expect((await decideInvocation(changed.deps, job, older)).outcome).toBe('denied');
        expect(again).toHaveBeenCalledTimes(1);
      }
    });
  });

  it('decides one whose key was rotated and is still in its grace (revoked later): the old key still works', async () => {
    const later = new Date(now.getTime() + 60_000);
    const { deps, decisions, finishes } = fakes(allow, ['cred_1'], {}, later);
    expect(await evaluateInvocation(deps, job)).toBe('admitted');
    expect(decisions[0]?.status).toBe('running');
    expect(finishes).toEqual([]);
  });
});
