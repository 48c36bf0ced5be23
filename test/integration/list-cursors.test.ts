import { z } from 'zod';
import { ROUTES } from '../../api/routes';
import { gatedBody, gatedOrg, PAGE_COOKIE, personWithRole } from '../browser/approvals-page-fixtures';
import { pausedInvoke } from '../support/approval-fixtures';
import { eventually } from '../support/eventually';
import { mintKey } from '../support/factories';
import { finished, invoke, invokeBody, openSession } from '../support/invoke-fixtures';
import { startLocalServer, type LocalServer } from '../support/local-server';
import { startTestApp, type TestApp } from '../support/test-app';

jest.setTimeout(60_000);

/**
 * A cursor pages only the list that returned it: every list that pages refuses the next_cursor of
 * every other with 400 validation_error, and a cursor issued before cursors named their list
 * still pages on (for one release).
 */
interface Page {
  data: unknown[];
  next_cursor: string | null;
}

interface ListCall {
  url: string;
  headers: Record<string, string>;
}

let app: TestApp;
let receiver: LocalServer;
/** Each list that pages, by its route (or the approver page's path), called with limit=1. */
const lists = new Map<string, ListCall>();
const cursors = new Map<string, string>();

beforeAll(async () => {
  app = await startTestApp({
    workers: true,
    env: { CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true', CP_ALLOW_PRIVATE_WEBHOOK_HOSTS: 'true' },
  });
  receiver = await startLocalServer((_req, res) => res.writeHead(200).end());
  const gated = await gatedOrg(app.http);
  const admin = gated.setup.org.adminKey;
  const asAdmin = { authorization: `Bearer ${admin}` };
  const webhookId = await makeTwoOfEverything(admin, gated.setup.agentId, gated.sessionId);
  for (let i = 0; i < 2; i++)
    await pausedInvoke(app.http, gated.agentKey, gatedBody(gated.sessionId, `q${i}`));
  // The deliveries come from the audit log's feed, after the answers above.
  await eventually(
    async () => (await firstPage(`/v1/webhooks/${webhookId}/deliveries`, asAdmin)).next_cursor,
  );

  const ids: Record<string, string> = {
    '/v1/sessions/{id}/history': gated.sessionId,
    '/v1/webhooks/{id}/deliveries': webhookId,
  };
  for (const path of listPaths())
    lists.set(path, { url: path.replace('{id}', ids[path] ?? 'missing'), headers: asAdmin });
  lists.set('/approvals/api/approvals', {
    url: '/approvals/api/approvals',
    headers: await pageSession(admin),
  });
  for (const [path, call] of lists) {
    const page = await firstPage(call.url, call.headers);
    if (!page.next_cursor) throw new Error(`${path}: no second page`);
    cursors.set(path, page.next_cursor);
  }
});
afterAll(async () => {
  await app.close();
  await receiver.stop();
});

/** The routes whose query takes a cursor: every list of the API that pages. */
function listPaths(): string[] {
  return ROUTES.filter(
    (r) => r.method === 'GET' && r.query instanceof z.ZodObject && 'cursor' in (r.query.shape as object),
  ).map((r) => r.path);
}

/** Two of each thing a list shows, so each has a second page; returns a webhook with deliveries. */
async function makeTwoOfEverything(admin: string, agentId: string, sessionId: string): Promise<string> {
  const create = async (path: string, body: unknown) => {
    const res = await app.http.post<{ id: string }>(path, body, admin);
    if (res.status !== 201) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.id;
  };
  await mintKey(app.http, admin, ['audit:read']);
  await create('/v1/credentials', { name: 'second', provider: 'mock', secret: 'mock-secret-0002' });
  await create('/v1/agents', { name: 'second' });
  await create('/v1/policies', { name: 'short', rules: [{ type: 'max_tokens', limit: 256 }] });
  await openSession(app.http, admin, { agent_id: agentId, max_cost_usd: 1 });
  const events = ['approval.requested', 'invocation.finished'];
  await create('/v1/webhooks', { url: receiver.url('/first'), events });
  const webhookId = await create('/v1/webhooks', { url: receiver.url('/second'), events });
  for (let i = 0; i < 2; i++) {
    const res = await invoke(app.http, admin, invokeBody(sessionId), 0);
    await finished(app.http, admin, res.body.id);
  }
  return webhookId;
}

/** A viewer of the org signed in to the approver's page: its session cookie. */
async function pageSession(admin: string): Promise<Record<string, string>> {
  const viewer = await personWithRole(app.http, admin, 'viewer');
  const res = await app.http.post('/approvals/session', { email: viewer.email, password: viewer.password });
  const cookie = res.headers.getSetCookie().find((c) => c.startsWith(`${PAGE_COOKIE}=`)) ?? '';
  return { cookie: cookie.split(';')[0] ?? '' };
}

const get = (url: string, headers: Record<string, string>) =>
  app.http.call<Page & { error_code?: string; details?: { path: string }[] }>('GET', url, { headers });

async function firstPage(url: string, headers: Record<string, string>): Promise<Page> {
  const res = await get(`${url}?limit=1`, headers);
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

const withCursor = (call: ListCall, cursor: string) =>
  get(`${call.url}?limit=1&cursor=${encodeURIComponent(cursor)}`, call.headers);

/** The cursor as issued before cursors named their list: the position alone. */
function legacyOf(cursor: string): string {
  const { p } = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as { p: unknown };
  return Buffer.from(JSON.stringify({ p })).toString('base64url');
}

it('finds every list that pages in the routes, and the approver page', () => {
  expect([...lists.keys()].sort()).toEqual([
    '/approvals/api/approvals',
    '/v1/acs/decisions',
    '/v1/agents',
    '/v1/approvals',
    '/v1/audit',
    '/v1/credentials',
    '/v1/keys',
    '/v1/llm/invocations',
    '/v1/policies',
    '/v1/sessions',
    '/v1/sessions/{id}/history',
    '/v1/webhooks',
    '/v1/webhooks/{id}/deliveries',
  ]);
});

it("pages each list with its own cursor, and refuses every other list's cursor with 400 validation_error", async () => {
  for (const [path, call] of lists) {
    const own = await withCursor(call, cursors.get(path) ?? '');
    expect([path, own.status]).toEqual([path, 200]);
    for (const [from, cursor] of cursors) {
      if (from === path) continue;
      const res = await withCursor(call, cursor);
      expect({ path, from, status: res.status, error_code: res.body.error_code }).toEqual({
        path,
        from,
        status: 400,
        error_code: 'validation_error',
      });
      expect(res.body.details?.map((d) => d.path)).toEqual(['cursor']);
    }
  }
});

it('still pages on with a cursor issued before cursors named their list', async () => {
  for (const [path, call] of lists) {
    const cursor = cursors.get(path) ?? '';
    const legacy = legacyOf(cursor);
    expect(legacy).not.toBe(cursor);
    const [now, before] = [await withCursor(call, cursor), await withCursor(call, legacy)];
    expect([path, before.status, before.body]).toEqual([path, 200, now.body]);
    expect(before.body.data).toHaveLength(1);
  }
});
