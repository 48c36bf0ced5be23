import type { InvokeContext, InvokeContextQuery } from '../../domain/invocations/invocation-store';
import { openSession, setUpInvoking, type InvokeSetup } from '../support/invoke-fixtures';
import { startTestApp, type TestApp } from '../support/test-app';

let app: TestApp;
let a: InvokeSetup & { sessionId: string };
let b: InvokeSetup & { sessionId: string };

async function orgWithSession(): Promise<InvokeSetup & { sessionId: string }> {
  const setup = await setUpInvoking(app.http);
  const session = await openSession(app.http, setup.org.adminKey, {
    agent_id: setup.agentId,
    max_cost_usd: 1,
  });
  return { ...setup, sessionId: session.id };
}

beforeAll(async () => {
  app = await startTestApp();
  a = await orgWithSession();
  b = await orgWithSession();
});
afterAll(() => app.close());

const query = (over: Partial<InvokeContextQuery> & { sessionId: string }): InvokeContextQuery => ({
  agentId: null,
  credentialRef: null,
  model: 'mock-1',
  ...over,
});

describe('admission reads, batched across concurrent requests', () => {
  it('gives each request of a batch its own context, as it would get alone', async () => {
    const asked: [string, InvokeContextQuery][] = [
      [a.org.orgId, query({ sessionId: a.sessionId })],
      [b.org.orgId, query({ sessionId: b.sessionId })],
      [a.org.orgId, query({ sessionId: b.sessionId })],
      [a.org.orgId, query({ sessionId: a.sessionId, model: 'unpriced-model' })],
      [a.org.orgId, query({ sessionId: a.sessionId, credentialRef: b.credentialRef })],
      [b.org.orgId, query({ sessionId: b.sessionId, agentId: a.agentId })],
    ];
    const read = (orgId: string, q: InvokeContextQuery) => app.infra.invocations.invokeContext(orgId, q);
    const together = await Promise.all(asked.map(([orgId, q]) => read(orgId, q)));
    const alone: InvokeContext[] = [];
    for (const [orgId, q] of asked) alone.push(await read(orgId, q));
    expect(together).toEqual(alone);

    const [own, other, crossSession, unpriced, crossCredential, crossAgent] = together as InvokeContext[];
    expect([own?.session?.id, own?.agent?.id, own?.credential?.ref]).toEqual([
      a.sessionId,
      a.agentId,
      a.credentialRef,
    ]);
    expect(own?.orgPrice).not.toBeNull();
    expect([other?.session?.id, other?.agent?.id, other?.credential?.ref]).toEqual([
      b.sessionId,
      b.agentId,
      b.credentialRef,
    ]);
    // Nothing of another org is ever found.
    expect(crossSession).toMatchObject({ session: null, agent: null, credential: null });
    expect(unpriced?.orgPrice).toBeNull();
    expect(crossCredential?.credential).toBeNull();
    expect(crossAgent).toMatchObject({ agent: null, credential: null });
  });
});
