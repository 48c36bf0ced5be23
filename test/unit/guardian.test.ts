import { Guardian, type GuardianInput, type PolicyEngine } from '../../domain/policy/guardian';

const input = (over: Partial<GuardianInput> = {}): GuardianInput => ({
  orgId: 'org_1',
  sessionId: 'ses_1',
  agent: { id: 'agt_1', status: 'active', allowedModels: ['gpt-4o-mini'], credentialRefs: ['cred_1'] },
  credentialRef: 'cred_1',
  action: {
    type: 'llm.invoke',
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'hi' }],
    maxTokens: 10,
    estimatedCostUsd: 0.001,
  },
  ...over,
});

const recording = (): PolicyEngine & { seen: GuardianInput[] } => {
  const seen: GuardianInput[] = [];
  return {
    seen,
    evaluate: async (i) => {
      seen.push(i);
      return {
        verdict: 'allow',
        reasons: [],
        shadowReasons: [],
        modifiedAction: null,
        approval: null,
        policyVersion: 7,
      };
    },
  };
};

describe('the guardian', () => {
  it('allows what the agent record allows, with no reasons, by default', async () => {
    expect(await new Guardian().decide(input())).toEqual({
      verdict: 'allow',
      reasons: [],
      shadowReasons: [],
      modifiedAction: null,
      approval: null,
      policyVersion: 0,
    });
  });

  it('denies a suspended agent, whatever its policies say', async () => {
    const engine = recording();
    const verdict = await new Guardian(engine).decide(
      input({
        agent: {
          id: 'agt_1',
          status: 'suspended',
          allowedModels: ['gpt-4o-mini'],
          credentialRefs: ['cred_1'],
        },
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
      input({ agent: { id: 'agt_1', status: 'active', allowedModels: [], credentialRefs: ['cred_1'] } }),
    );
    expect(none.verdict).toBe('deny');
  });

  it('denies a credential outside the agent credential_refs, before its policies see it', async () => {
    const engine = recording();
    const verdict = await new Guardian(engine).decide(input({ credentialRef: 'cred_2' }));
    expect(verdict).toEqual({
      verdict: 'deny',
      reasons: [
        {
          policyId: null,
          code: 'credential_not_allowed',
          message: 'credential cred_2 is not in the credential_refs of agent agt_1',
        },
      ],
      shadowReasons: [],
      modifiedAction: null,
      approval: null,
      policyVersion: 0,
    });
    expect(engine.seen).toEqual([]);
  });

  it('lets an agent use any credential of its list, not only the first', async () => {
    const agent = {
      id: 'agt_1',
      status: 'active' as const,
      allowedModels: ['gpt-4o-mini'],
      credentialRefs: ['cred_1', 'cred_2'],
    };
    expect((await new Guardian().decide(input({ agent, credentialRef: 'cred_2' }))).verdict).toBe('allow');
  });

  it('denies every credential to an agent whose credential_refs is empty (as allowed_models)', async () => {
    const agent = {
      id: 'agt_1',
      status: 'active' as const,
      allowedModels: ['gpt-4o-mini'],
      credentialRefs: [],
    };
    const verdict = await new Guardian().decide(input({ agent }));
    expect(verdict.verdict).toBe('deny');
    expect(verdict.reasons.map((r) => r.code)).toEqual(['credential_not_allowed']);
  });

  it('hands what the built-in checks let through to the policy engine, and so an invocation with no agent', async () => {
    const engine = recording();
    const guardian = new Guardian(engine);
    expect((await guardian.decide(input())).policyVersion).toBe(7);
    expect(
      (
        await guardian.decide(
          input({ agent: null, credentialRef: 'cred_any', action: { ...input().action, model: 'any' } }),
        )
      ).verdict,
    ).toBe('allow');
    expect(engine.seen).toHaveLength(2);
  });
});
