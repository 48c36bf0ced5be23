import { createHash } from 'node:crypto';
import { actionDigest } from '../../domain/policy/action-digest';
import { withoutPromptText, type Decision } from '../../domain/policy/decision';
import { decisionJson, toDecision, type DecisionRow } from '../../infra/invocations/invocation-rows';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

const decision: Decision = {
  id: 'dec_1',
  orgId: 'org_1',
  invocationId: 'inv_1',
  sessionId: 'ses_1',
  agentId: 'agt_1',
  verdict: 'modify',
  reasons: [{ policyId: 'pol_1', code: 'max_tokens', message: 'clamped', ruleIndex: 1 }],
  shadowReasons: [
    { policyId: 'pol_2', code: 'deny_models', message: 'would deny', ruleIndex: 0, verdict: 'deny' },
  ],
  modifiedAction: {
    type: 'llm.invoke',
    model: 'm',
    messages: [{ role: 'user', content: 'secret' }],
    max_tokens: 8,
    tools: [{ type: 'function', function: { name: 'f', description: 'secret too' } }],
  },
  policyVersion: 4,
  actionDigest: 'a'.repeat(64),
  evaluatedAt: new Date('2026-11-22T12:00:00Z'),
};

describe('the action digest', () => {
  it('is the SHA-256 of the canonical JSON: key order does not matter, content does', () => {
    expect(actionDigest({ b: 2, a: 1 })).toBe(sha256('{"a":1,"b":2}'));
    expect(actionDigest({ a: 1, b: 2 })).toBe(actionDigest({ b: 2, a: 1 }));
    expect(actionDigest({ a: 1, b: 3 })).not.toBe(actionDigest({ a: 1, b: 2 }));
  });
});

describe('a decision as stored', () => {
  it('drops the messages and the tool definitions of the modified action, whoever built the decision', () => {
    const row = decisionJson(decision);
    expect(row.modified_action).toEqual({ type: 'llm.invoke', model: 'm', max_tokens: 8 });
    expect(JSON.stringify(row)).not.toContain('secret');
    expect(withoutPromptText(null)).toBeNull();
  });

  it('keeps reasons with their rule index, shadow reasons with their verdict, and the digest', () => {
    const row = decisionJson(decision);
    expect(row.reasons).toEqual([
      { policy_id: 'pol_1', code: 'max_tokens', message: 'clamped', rule_index: 1 },
    ]);
    const back = toDecision({
      ...row,
      evaluated_at: row.evaluated_at.toISOString(),
    } as unknown as DecisionRow);
    expect(back).toEqual({ ...decision, modifiedAction: row.modified_action });
  });

  it('reads reasons stored before rule indexes existed as rule index null', () => {
    const row = decisionJson(decision);
    const legacy = { ...row, reasons: [{ policy_id: null, code: 'model_not_allowed', message: 'no' }] };
    expect(toDecision(legacy as unknown as DecisionRow).reasons).toEqual([
      { policyId: null, code: 'model_not_allowed', message: 'no', ruleIndex: null },
    ]);
  });
});
