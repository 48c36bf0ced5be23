import { submittedDigest } from '../../domain/invocations/evaluate-invocation';
import { assertSameRequest, type AskedRequest } from '../../domain/invocations/same-request';
import type { Decision } from '../../domain/policy/decision';
import { invocationRow } from '../support/invocation-row';

/**
 * What a chat resume (X-Invocation-Id) is held against: the row's request before the guardian
 * decided, the decision log's digest of the submitted request after.
 */
const asked: AskedRequest = {
  model: 'm',
  request: { messages: [{ role: 'user', content: 'hi' }], maxTokens: 10 },
};
const other: AskedRequest = {
  ...asked,
  request: { ...asked.request, messages: [{ role: 'user', content: 'bye' }] },
};

/** A decision log holding one decision, with the digest given. */
const logWith = (actionDigest: string | null) => ({
  get: (orgId: string, id: string) =>
    Promise.resolve(
      orgId === 'org_1' && id === 'dec_1' ? ({ id, actionDigest } as unknown as Decision) : null,
    ),
});
const decided = invocationRow({ decision: { id: 'dec_1', verdict: 'modify', reasons: [] } });

describe('assertSameRequest', () => {
  it('before the decision, holds the request against the row', async () => {
    const queued = invocationRow();
    await expect(assertSameRequest(logWith(null), queued, asked)).resolves.toBeUndefined();
    await expect(assertSameRequest(logWith(null), queued, other)).rejects.toMatchObject({
      code: 'validation_error',
    });
  });

  it("after the decision, holds it against the decision's digest, not the row a policy rewrote", async () => {
    const rewritten = { ...decided, request: other.request };
    const log = logWith(submittedDigest({ ...decided, ...asked }));
    await expect(assertSameRequest(log, rewritten, asked)).resolves.toBeUndefined();
    await expect(assertSameRequest(log, rewritten, other)).rejects.toMatchObject({
      code: 'validation_error',
    });
  });

  it('passes a decision recorded without a digest, or missing from the log: nothing to check against', async () => {
    await expect(assertSameRequest(logWith(null), decided, other)).resolves.toBeUndefined();
    const unknown = invocationRow({ decision: { id: 'dec_gone', verdict: 'allow', reasons: [] } });
    await expect(assertSameRequest(logWith('x'), unknown, other)).resolves.toBeUndefined();
  });

  it('covers max_tokens, tools and tool_choice, and not temperature or stream', async () => {
    const queued = invocationRow();
    const withRequest = (request: Partial<AskedRequest['request']>) => ({
      ...asked,
      request: { ...asked.request, ...request },
    });
    for (const changed of [{ maxTokens: 11 }, { tools: [{ type: 'function' }] }, { toolChoice: 'none' }])
      await expect(assertSameRequest(logWith(null), queued, withRequest(changed))).rejects.toThrow(
        'another request',
      );
    for (const same of [{ temperature: 0.3 }, { stream: true }, { metadata: { a: 1 } }])
      await expect(assertSameRequest(logWith(null), queued, withRequest(same))).resolves.toBeUndefined();
  });
});
