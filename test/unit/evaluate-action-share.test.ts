import { OrgAtCapacity } from '../../domain/org-at-capacity';
import type { CompiledPolicies } from '../../domain/policy/compiled-policies';
import { compilePolicies, type CompiledPolicySet } from '../../domain/policy/compile-policies';
import type { Decision } from '../../domain/policy/decision';
import { evaluateAction, type EvaluateActionDeps } from '../../domain/policy/evaluate-action';
import type { EvaluationRequest } from '../../domain/policy/evaluation';
import { EvaluationRunner } from '../../domain/policy/evaluation-runner';
import { EVALUATION_BURST_MS, EvaluationTime } from '../../domain/policy/evaluation-time';

/** `POST /v1/acs/evaluate`'s job within the org's share of evaluation time (evaluation-time.ts). */
const request: EvaluationRequest = {
  id: 'dec_1',
  orgId: 'org_1',
  agentId: null,
  sessionId: null,
  agent: null,
  action: { type: 'tool.call', tool: { name: 'search', arguments: {} } },
  requestedBy: { type: 'api_key', id: 'key_1' },
  requestId: null,
};

function deps(time: EvaluationTime) {
  const recorded: Decision[] = [];
  const compiled = compilePolicies({ orgId: 'org_1', policyVersion: 1, policies: [] });
  const policies = {
    forOrg: async () => ({ version: 1, compiled }),
  } as unknown as CompiledPolicies<CompiledPolicySet>;
  const d: EvaluateActionDeps = {
    relay: {
      put: async () => undefined,
      request: async () => request,
      claim: async () => 'taken',
      withdraw: async () => true,
      answer: async () => undefined,
      answered: async () => null,
    },
    policies,
    policyVersion: async () => 1,
    decisions: {
      record: async (decision: Decision) => void recorded.push(decision),
    } as unknown as EvaluateActionDeps['decisions'],
    announce: async () => undefined,
    runner: new EvaluationRunner(time, null),
    clock: { now: () => new Date('2026-11-28T12:00:00Z') },
  };
  return { deps: d, recorded };
}

it('puts the job back (OrgAtCapacity) while its org is past its share, deciding and recording nothing', async () => {
  let now = 0;
  const time = new EvaluationTime(250, () => now);
  time.charge('org_1', EVALUATION_BURST_MS + 500);
  const { deps: d, recorded } = deps(time);
  await expect(evaluateAction(d, 'dec_1')).rejects.toBeInstanceOf(OrgAtCapacity);
  expect(recorded).toEqual([]);
  now += 2_000;
  expect(await evaluateAction(d, 'dec_1')).toBe('decided');
  expect(recorded.map((r) => r.verdict)).toEqual(['allow']);
});
