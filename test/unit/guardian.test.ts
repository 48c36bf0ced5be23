import { Guardian, type GuardianInput, type PolicyEngine } from '../../domain/guardian/guardian';

const input = (over: Partial<GuardianInput> = {}): GuardianInput => ({
  orgId: 'org_1',
  sessionId: 'ses_1',
  agent: { id: 'agt_1', status: 'active', allowedModels: ['gpt-4o-mini'], credentialRefs: [] },
  action: {
    type: 'llm.invoke',
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'hi' }],
    maxTokens: 10,
  },
  ...over,
});

const recording = (): PolicyEngine & { seen: GuardianInput[] } => {
  const seen: GuardianInput[] = [];
  return {
    seen,
    evaluate: async (i) => {
      seen.push(i);
      return { verdict: 'allow', reasons: [], modifiedAction: null, policyVersion: 7 };
    },
  };
};

describe('the guardian', () => {
  it('allows what the agent record allows, with no reasons, by default', async () => {
    expect(await new Guardian().decide(input())).toEqual({
      verdict: 'allow',
      reasons: [],
      modifiedAction: null,
      policyVersion: 0,
    });
  });

  it('denies a suspended agent, whatever its policies say', async () => {
    const engine = recording();
    const verdict = await new Guardian(engine).decide(
      input({
        agent: { id: 'agt_1', status: 'suspended', allowedModels: ['gpt-4o-mini'], credentialRefs: [] },
      }),
    );
    expect(verdict.verdict).toBe('deny');
    expect(verdict.reasons).toEqual([
      { policyId: null, code: 'agent_suspended', message: expect.stringContaining('agt_1') },
    ]);
    expect(engine.seen).toEqual([]);
  });

  it('denies a model outside allowed_models (an empty list allows nothing)', async () => {
    const other = await new Guardian().decide(input({ action: { ...input().action, model: 'o3' } }));
    expect(other.reasons[0]?.code).toBe('model_not_allowed');
    const none = await new Guardian().decide(
      input({ agent: { id: 'agt_1', status: 'active', allowedModels: [], credentialRefs: [] } }),
    );
    expect(none.verdict).toBe('deny');
  });

  it('hands what the built-in checks let through to the policy engine, and so an invocation with no agent', async () => {
    const engine = recording();
    const guardian = new Guardian(engine);
    expect((await guardian.decide(input())).policyVersion).toBe(7);
    expect(
      (await guardian.decide(input({ agent: null, action: { ...input().action, model: 'any' } }))).verdict,
    ).toBe('allow');
    expect(engine.seen).toHaveLength(2);
  });
});
