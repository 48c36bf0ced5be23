import type { Invocation } from '../../domain/invocations/invocation';
import type { SealedCredential } from '../../domain/invocations/invocation-store';

/** An invocation as its row reads, for unit tests of the pipeline's stages: queued unless told. */
export const invocationRow = (over: Partial<Invocation> = {}): Invocation => {
  const at = over.createdAt ?? new Date('2026-11-22T12:00:00Z');
  return {
    id: 'inv_1',
    orgId: 'org_1',
    sessionId: 'ses_1',
    agentId: null,
    requestedBy: { type: 'api_key', id: 'key_1' },
    status: 'queued',
    model: 'm',
    provider: 'mock',
    credentialRef: 'cred_1',
    request: { messages: [{ role: 'user', content: 'hi' }], maxTokens: 10 },
    price: { inputMicrosPerMtok: 1_000_000, outputMicrosPerMtok: 2_000_000 },
    reservation: { costMicros: 100, tokens: 20 },
    decision: null,
    approvalId: null,
    output: null,
    usage: null,
    costMicros: 0,
    chargedCalls: 0,
    providerAttempts: 0,
    error: null,
    requestId: null,
    createdAt: at,
    updatedAt: at,
    completedAt: null,
    ...over,
  };
};

/** The sealed credential `cred_1` those invocations run with, as the stages read it. */
export const sealedCredential: SealedCredential = {
  ref: 'cred_1',
  provider: 'mock',
  baseUrl: null,
  version: 1,
  sealedSecret: 'sealed',
  keyId: 'k1',
};
