import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mintKey } from '../support/factories';
import { eventually, finished, setUpInvoking, type InvokeSetup } from '../support/invoke-fixtures';
import { approverKeys, pausedInvoke, requireApproval, sessionFor, vote } from '../support/approval-fixtures';
import { startTestApp, type TestApp } from '../support/test-app';

/** The approval flow's events reach an approver's tool as signed webhooks, from the real pipeline. */
let app: TestApp;
let setup: InvokeSetup;
let server: Server;
let secret: string;
const received: { headers: IncomingHttpHeaders; body: string }[] = [];

interface Event {
  type: string;
  id: string;
  data: Record<string, unknown>;
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString() });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  app = await startTestApp({
    workers: true,
    env: { CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true', CP_ALLOW_PRIVATE_WEBHOOK_HOSTS: 'true' },
  });
  setup = await setUpInvoking(app.http, { models: ['mock-1'] });
  await requireApproval(app.http, setup.org.adminKey, { model: 'mock-1' });
  const hook = await app.http.post<{ secret: string }>(
    '/v1/webhooks',
    {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/approvals`,
      events: ['approval.requested', 'approval.resolved', 'invocation.finished'],
    },
    setup.org.adminKey,
  );
  expect(hook.status).toBe(201);
  secret = hook.body.secret;
}, 60_000);
afterAll(async () => {
  await app.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** Verifies the Standard Webhooks signature as a receiver would, and returns the event. */
function verified(r: { headers: IncomingHttpHeaders; body: string }): Event {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const signed = `${r.headers['webhook-id']}.${r.headers['webhook-timestamp']}.${r.body}`;
  const expected = `v1,${createHmac('sha256', key).update(signed).digest('base64')}`;
  expect(String(r.headers['webhook-signature']).split(' ')).toContain(expected);
  return JSON.parse(r.body) as Event;
}

it('an approver tool hears approval.requested, approval.resolved and invocation.finished, signed, without prompt text', async () => {
  const agentKey = (await mintKey(app.http, setup.org.adminKey, ['invoke'])).key;
  const [approver] = (await approverKeys(app.http, setup.org.adminKey, 1)) as [string];
  const session = await sessionFor(app.http, setup);
  const { invocation, approval } = await pausedInvoke(app.http, agentKey, {
    session_id: session.id,
    model: 'mock-1',
    messages: [{ role: 'user', content: 'secret-plan-42' }],
    max_tokens: 16,
  });
  expect((await vote(app.http, approver, approval.id, 'approve')).status).toBe(200);
  expect((await finished(app.http, agentKey, invocation.id)).status).toBe('succeeded');

  const events = await eventually(() => {
    const all = received.map(verified);
    return all.length >= 3 ? all : null;
  });
  const byType = Object.fromEntries(events.map((e) => [e.type, e]));
  expect(byType['approval.requested']?.data).toMatchObject({ approval_id: approval.id, status: 'pending' });
  expect(byType['approval.resolved']?.data).toMatchObject({ approval_id: approval.id, status: 'approved' });
  expect(byType['invocation.finished']?.data).toMatchObject({
    invocation_id: invocation.id,
    status: 'succeeded',
    approval_id: approval.id,
  });
  expect(received.map((r) => r.body).join()).not.toContain('secret-plan-42');
});
