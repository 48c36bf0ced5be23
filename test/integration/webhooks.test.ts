import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { firstIdAt, newId } from '../../domain/ids';
import { LOST_AFTER_MS } from '../../domain/webhooks/requeue-lost-deliveries';
import { DELIVERY_WINDOW_MS, MAX_RETRY_DELAY_MS, retryDelayMs } from '../../domain/webhooks/retry-schedule';
import { HttpWebhookSender } from '../../infra/webhooks/http-webhook-sender';
import { pruneWebhookDeliveries, sweepWebhooks } from '../../workers/webhook-processor';
import { eventually } from '../support/eventually';
import { MAX_WEBHOOKS_PER_ORG } from '../../domain/webhooks/webhook-use-cases';
import { sendEvent } from '../support/webhook-events';
import { startLocalServer, type LocalServer } from '../support/local-server';
import { mintKey, signupOrg, type SignedUpOrg } from '../support/factories';
import { startTestApp, type TestApp } from '../support/test-app';

interface WebhookBody {
  id: string;
  url: string;
  events: string[];
  description: string | null;
  created_at: string;
  secret?: string;
}

interface DeliveryBody {
  id: string;
  type: string;
  status: string;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  created_at: string;
  last_attempt_at: string | null;
  delivered_at: string | null;
}

interface Page<T> {
  data: T[];
  next_cursor: string | null;
}

/** A status, no answer at all, a redirect, or a status with a body of `bytes` bytes. */
type Answer = number | 'hang' | 'redirect' | { status: number; bytes: number };

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  answered: Answer;
}

/** A local receiver: records every request, answers each path from a script, then 200. */
class Receiver {
  readonly received: Received[] = [];
  private readonly scripts = new Map<string, Answer[]>();
  private readonly always = new Map<string, Answer>();
  private server!: LocalServer;

  async start(): Promise<void> {
    this.server = await startLocalServer(({ path, headers, body }, res) => {
      const answer = this.scripts.get(path)?.shift() ?? this.always.get(path) ?? 200;
      this.received.push({ path, headers, body, answered: answer });
      if (answer === 'hang') return;
      if (answer === 'redirect') return void res.writeHead(302, { location: `${path}-moved` }).end();
      if (typeof answer === 'object')
        return void res
          .writeHead(answer.status, { 'content-type': 'text/plain' })
          .end('x'.repeat(answer.bytes));
      res.writeHead(answer, { 'content-type': 'text/plain' }).end(`answer ${answer} with some body text`);
    });
  }

  /** A fresh path on this receiver, answered `script` in order and then `then` (200 by default). */
  url(script: Answer[] = [], then?: Answer): string {
    const path = `/hook-${randomBytes(4).toString('hex')}`;
    this.scripts.set(path, [...script]);
    if (then !== undefined) this.always.set(path, then);
    return this.server.url(path);
  }

  at(url: string): Received[] {
    const path = new URL(url).pathname;
    return this.received.filter((r) => r.path === path);
  }

  stop(): Promise<void> {
    return this.server.stop();
  }
}

let app: TestApp;
let org: SignedUpOrg;
let other: SignedUpOrg;
const receiver = new Receiver();
const secrets: string[] = [];

beforeAll(async () => {
  app = await startTestApp({
    workers: true,
    captureLogs: true,
    env: {
      CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true',
      CP_ALLOW_PRIVATE_WEBHOOK_HOSTS: 'true',
      CP_WEBHOOK_BACKOFF_MS: '100',
      CP_WEBHOOK_TIMEOUT_MS: '500',
    },
  });
  org = await signupOrg(app.http);
  other = await signupOrg(app.http, 'Other');
  await receiver.start();
});
afterAll(async () => {
  await receiver.stop();
  await app.close();
});

async function create(body: Record<string, unknown>, token = org.adminKey) {
  const res = await app.http.post<WebhookBody>('/v1/webhooks', body, token);
  if (res.body.secret) secrets.push(res.body.secret);
  return res;
}

async function subscribe(url: string, events = ['approval.requested']): Promise<WebhookBody> {
  const res = await create({ url, events });
  expect(res.status).toBe(201);
  return res.body;
}

const deliveriesOf = async (id: string, token = org.adminKey) =>
  (await app.http.get<Page<DeliveryBody>>(`/v1/webhooks/${id}/deliveries`, token)).body.data;

/** The delivery once `ready` holds for it. */
const deliveryWhen = (id: string, ready: (d: DeliveryBody) => boolean, token = org.adminKey) =>
  eventually(async () => (await deliveriesOf(id, token)).find(ready));

/** What the receiver recomputes, with node:crypto only: the Standard Webhooks verification. */
function verifySignature(secret: string, r: Received): boolean {
  const id = String(r.headers['webhook-id']);
  const timestamp = String(r.headers['webhook-timestamp']);
  const expected = createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64'))
    .update(`${id}.${timestamp}.${r.body}`)
    .digest('base64');
  return String(r.headers['webhook-signature']).split(' ').includes(`v1,${expected}`);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('webhooks: managing them', () => {
  it('creates a webhook and shows its secret ("whsec_" + base64 of 32 bytes) in that answer only', async () => {
    const url = receiver.url();
    const res = await create({
      url,
      events: ['approval.requested', 'invocation.finished', 'approval.requested'],
      description: 'pager',
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^whk_/),
      url,
      events: ['approval.requested', 'invocation.finished'],
      description: 'pager',
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
      created_at: expect.any(String),
    });
    expect(Buffer.from(String(res.body.secret).slice(6), 'base64')).toHaveLength(32);

    const one = await app.http.get<WebhookBody>(`/v1/webhooks/${res.body.id}`, org.adminKey);
    expect(one.status).toBe(200);
    const { secret: _secret, ...withoutSecret } = res.body;
    expect(one.body).toEqual(withoutSecret);
    const row = await app.infra.knex('webhooks').where({ id: res.body.id }).first();
    expect(JSON.stringify(row)).not.toContain(String(res.body.secret).slice(6));
    expect(row.key_id).toBe(app.infra.keyring.current.id);
  });

  it('lists live webhooks newest first, a page at a time, without secrets', async () => {
    const a = await subscribe(receiver.url());
    const b = await subscribe(receiver.url());
    const first = await app.http.get<Page<WebhookBody>>('/v1/webhooks?limit=1', org.adminKey);
    expect(first.status).toBe(200);
    expect(first.body.data.map((w) => w.id)).toEqual([b.id]);
    expect(first.body.next_cursor).toEqual(expect.any(String));
    const second = await app.http.get<Page<WebhookBody>>(
      `/v1/webhooks?limit=1&cursor=${first.body.next_cursor}`,
      org.adminKey,
    );
    expect(second.body.data.map((w) => w.id)).toEqual([a.id]);
    const all = await app.http.get<Page<WebhookBody>>('/v1/webhooks?limit=100', org.adminKey);
    expect(all.body.data.length).toBeGreaterThanOrEqual(3);
    for (const w of all.body.data) expect(w).not.toHaveProperty('secret');
  });

  it('deletes with 204, then answers 404 for it and leaves it out of the list', async () => {
    const w = await subscribe(receiver.url());
    const del = await app.http.delete(`/v1/webhooks/${w.id}`, org.adminKey);
    expect(del.status).toBe(204);
    expect((await app.http.get(`/v1/webhooks/${w.id}`, org.adminKey)).status).toBe(404);
    expect((await app.http.get(`/v1/webhooks/${w.id}/deliveries`, org.adminKey)).status).toBe(404);
    expect((await app.http.delete(`/v1/webhooks/${w.id}`, org.adminKey)).status).toBe(404);
    const list = await app.http.get<Page<WebhookBody>>('/v1/webhooks?limit=100', org.adminKey);
    expect(list.body.data.map((x) => x.id)).not.toContain(w.id);
    const row = await app.infra.knex('webhooks').where({ id: w.id }).first();
    expect(row.sealed_secret).toBeNull();
    expect(row.deleted_at).not.toBeNull();
  });

  it('records webhook.created and webhook.deleted in the audit log, never the secret', async () => {
    const created = await create({ url: receiver.url(), events: ['approval.resolved'] });
    await app.http.delete(`/v1/webhooks/${created.body.id}`, org.adminKey);
    await app.infra.auditLog.seal(org.orgId);
    const audit = await app.http.get<Page<{ action: string; details: Record<string, unknown> }>>(
      `/v1/audit?resource_id=${created.body.id}`,
      org.adminKey,
    );
    expect(audit.body.data.map((e) => e.action)).toEqual(['webhook.deleted', 'webhook.created']);
    expect(audit.body.data[1]?.details).toEqual({
      url: created.body.url,
      events: ['approval.resolved'],
      description: null,
    });
    const everything = JSON.stringify(await app.infra.knex('audit_entries').select('details'));
    const outbox = JSON.stringify(await app.infra.knex('audit_outbox').select('details'));
    for (const secret of secrets) {
      expect(everything).not.toContain(secret.slice(6));
      expect(outbox).not.toContain(secret.slice(6));
    }
  });

  it('is for org:admin only: another key gets 403 insufficient_scope', async () => {
    const w = await subscribe(receiver.url());
    const reader = (await mintKey(app.http, org.adminKey, ['audit:read', 'credentials:write'])).key;
    const attempts = [
      await create({ url: receiver.url(), events: ['approval.requested'] }, reader),
      await app.http.get('/v1/webhooks', reader),
      await app.http.get(`/v1/webhooks/${w.id}`, reader),
      await app.http.get(`/v1/webhooks/${w.id}/deliveries`, reader),
      await app.http.delete(`/v1/webhooks/${w.id}`, reader),
    ];
    for (const res of attempts) {
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ error_code: 'insufficient_scope', required_scope: 'org:admin' });
    }
    expect((await app.http.get(`/v1/webhooks/${w.id}`, org.adminKey)).status).toBe(200);
  });

  it("answers 404 for another org's webhook, and lists only the caller's", async () => {
    const w = await subscribe(receiver.url());
    expect((await app.http.get(`/v1/webhooks/${w.id}`, other.adminKey)).status).toBe(404);
    expect((await app.http.get(`/v1/webhooks/${w.id}/deliveries`, other.adminKey)).status).toBe(404);
    const del = await app.http.delete(`/v1/webhooks/${w.id}`, other.adminKey);
    expect(del.status).toBe(404);
    expect(del.body.error_code).toBe('not_found');
    const list = await app.http.get<Page<WebhookBody>>('/v1/webhooks', other.adminKey);
    expect(list.body.data).toEqual([]);
    expect((await app.http.get(`/v1/webhooks/${w.id}`, org.adminKey)).status).toBe(200);
  });

  it.each([
    ['no events', { url: 'https://hooks.example.com/a' }, 'events'],
    ['an empty events list', { url: 'https://hooks.example.com/a', events: [] }, 'events'],
    ['an unknown event', { url: 'https://hooks.example.com/a', events: ['invocation.started'] }, 'events'],
    ['events as a string', { url: 'https://hooks.example.com/a', events: 'approval.requested' }, 'events'],
    ['no url', { events: ['approval.requested'] }, 'url'],
    ['a url that is not one', { url: 'not a url', events: ['approval.requested'] }, 'url'],
    ['an ftp url', { url: 'ftp://hooks.example.com/a', events: ['approval.requested'] }, 'url'],
    [
      'plain http to a public host',
      { url: 'http://hooks.example.com/a', events: ['approval.requested'] },
      'url',
    ],
    [
      'user info in the url',
      { url: 'https://u:p@hooks.example.com/a', events: ['approval.requested'] },
      'url',
    ],
    [
      'a url of 3000 characters',
      { url: `https://a.example/${'x'.repeat(3000)}`, events: ['approval.requested'] },
      'url',
    ],
    [
      'a description of 501 characters',
      { url: 'https://a.example/h', events: ['approval.requested'], description: 'x'.repeat(501) },
      'description',
    ],
    ['a NUL in the url', { url: 'https://a.example/a\u0000b', events: ['approval.requested'] }, 'url'],
    // The URL parser would drop the spaces; U+202E turns how the rest of the URL reads (QA).
    ['spaces around the url', { url: ' https://a.example/h ', events: ['approval.requested'] }, 'url'],
    [
      'a right-to-left override in the url',
      { url: 'https://a.example/h\u202e', events: ['approval.requested'] },
      'url',
    ],
    ['port 0', { url: 'https://a.example:0/h', events: ['approval.requested'] }, 'url'],
    [
      'a host label of 64 characters',
      { url: `https://${'a'.repeat(64)}.example/h`, events: ['approval.requested'] },
      'url',
    ],
    [
      'a lone surrogate in the description',
      { url: 'https://a.example/h', events: ['approval.requested'], description: 'a\ud800' },
      'description',
    ],
    ['an unknown field', { url: 'https://a.example/h', events: ['approval.requested'], secret: 'x' }, ''],
  ])('refuses %s with 400 validation_error', async (_label, body, field) => {
    const res = await create(body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error_code: 'validation_error' });
    const details = (res.body as unknown as { details: { path: string }[] }).details;
    if (field) expect(details.some((d) => d.path.split('.')[0] === field)).toBe(true);
  });

  it('refuses a cursor it did not make, a limit out of range and a NUL in the id', async () => {
    const w = await subscribe(receiver.url());
    for (const path of [
      '/v1/webhooks?cursor=nope',
      '/v1/webhooks?limit=0',
      '/v1/webhooks?limit=101',
      '/v1/webhooks/a%00b',
      `/v1/webhooks/${w.id}/deliveries?cursor=nope`,
    ]) {
      const res = await app.http.get(path, org.adminKey);
      expect(res.status).toBe(400);
      expect(res.body.error_code).toBe('validation_error');
    }
  });
});

describe('webhooks: at most MAX_WEBHOOKS_PER_ORG live per org', () => {
  it('refuses one more with 400 validation_error, even when they are made at once; a deleted one makes room', async () => {
    const crowded = await signupOrg(app.http, 'Crowded');
    const made = await Promise.all(
      Array.from({ length: MAX_WEBHOOKS_PER_ORG + 5 }, () =>
        create({ url: receiver.url(), events: ['approval.requested'] }, crowded.adminKey),
      ),
    );
    expect(made.filter((r) => r.status === 201)).toHaveLength(MAX_WEBHOOKS_PER_ORG);
    const refused = made.filter((r) => r.status !== 201);
    expect(refused).toHaveLength(5);
    for (const r of refused) {
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ error_code: 'validation_error' });
      expect(JSON.stringify(r.body)).toContain(`${MAX_WEBHOOKS_PER_ORG} webhooks`);
    }
    const live = await app.http.get<Page<WebhookBody>>('/v1/webhooks?limit=100', crowded.adminKey);
    expect(live.body.data).toHaveLength(MAX_WEBHOOKS_PER_ORG);
    const one = made.find((r) => r.status === 201)?.body.id as string;
    expect((await app.http.delete(`/v1/webhooks/${one}`, crowded.adminKey)).status).toBe(204);
    expect(
      (await create({ url: receiver.url(), events: ['approval.requested'] }, crowded.adminKey)).status,
    ).toBe(201);
    // Another org is not counted against.
    expect((await subscribe(receiver.url())).id).toMatch(/^whk_/);
  });
});

describe('webhooks: private receivers (the provider-host SSRF guard)', () => {
  let strict: TestApp;
  let admin: string;
  beforeAll(async () => {
    // Credentials may reach private hosts here (a local model server); webhooks may not.
    strict = await startTestApp({ env: { CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true' } });
    admin = (await signupOrg(strict.http)).adminKey;
  });
  afterAll(() => strict.close());

  it.each([
    'http://127.0.0.1:8080/hook',
    'http://10.0.0.1/hook',
    'http://[::1]/hook',
    'http://169.254.169.254/latest/meta-data',
    'https://localhost/hook',
    'https://[::ffff:169.254.169.254]/hook',
  ])(
    'refuses %s without CP_ALLOW_PRIVATE_WEBHOOK_HOSTS, though credentials may reach private hosts (QA)',
    async (url) => {
      const res = await strict.http.post('/v1/webhooks', { url, events: ['approval.requested'] }, admin);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({
        error_code: 'validation_error',
        details: [{ path: 'url', message: expect.stringMatching(/CP_ALLOW_PRIVATE_WEBHOOK_HOSTS/) }],
      });
      const credential = await strict.http.post(
        '/v1/credentials',
        { name: 'x', provider: 'openai_compatible', secret: 'sk-test-x', base_url: url },
        admin,
      );
      expect(credential.status).toBe(201);
    },
  );

  it('accepts a public https receiver', async () => {
    const res = await strict.http.post(
      '/v1/webhooks',
      { url: 'https://hooks.example.com/cp', events: ['invocation.finished'] },
      admin,
    );
    expect(res.status).toBe(201);
    // Stored and shown as it is called (QA: fullwidth letters and upper case were kept as typed).
    const typed = await strict.http.post<{ url: string }>(
      '/v1/webhooks',
      { url: 'HTTPS://ｈｏｏｋｓ.Example.com/CP', events: ['invocation.finished'] },
      admin,
    );
    expect(typed.body.url).toBe('https://hooks.example.com/CP');
  });

  it("never connects to a private host when sending without the opt-in, the providers' notwithstanding", async () => {
    const url = receiver.url();
    const envelope = {
      type: 'approval.requested',
      id: 'msg_x',
      created_at: new Date().toISOString(),
      data: {},
    };
    const result = await strict.infra.webhookSender.post(url, {}, envelope, 1000);
    expect(result).toEqual({ status: null, error: 'the host is a loopback or private address' });
    expect(receiver.at(url)).toEqual([]);
  });
});

describe('webhooks: deliveries', () => {
  it('POSTs { type, id, created_at, data } signed as Standard Webhooks, and lists it delivered', async () => {
    const url = receiver.url();
    const res = await create({ url, events: ['approval.requested'] });
    const secret = String(res.body.secret);
    const before = Math.floor(Date.now() / 1000);
    await sendEvent(app.infra, org.orgId, 'invocation.finished', { invocation_id: 'inv_ignored' });
    await sendEvent(app.infra, org.orgId, 'approval.requested', {
      approval_id: 'apr_1',
      requested_at: new Date('2026-11-27T10:00:00Z'),
      nested: { text: 'héllo ✓', list: [1, null, true] },
    });
    const [received] = await eventually(() => receiver.at(url).length > 0 && receiver.at(url));
    expect(received?.headers['content-type']).toBe('application/json');
    const id = String(received?.headers['webhook-id']);
    expect(id).toMatch(/^msg_/);
    const timestamp = Number(received?.headers['webhook-timestamp']);
    expect(timestamp).toBeGreaterThanOrEqual(before);
    expect(timestamp).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
    expect(verifySignature(secret, received as Received)).toBe(true);
    expect(verifySignature(`whsec_${randomBytes(32).toString('base64')}`, received as Received)).toBe(false);
    expect(JSON.parse(String(received?.body))).toEqual({
      type: 'approval.requested',
      id,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      data: {
        approval_id: 'apr_1',
        requested_at: '2026-11-27T10:00:00.000Z',
        nested: { text: 'héllo ✓', list: [1, null, true] },
      },
    });

    const delivery = await deliveryWhen(res.body.id, (d) => d.status === 'delivered');
    expect(delivery).toEqual({
      id,
      type: 'approval.requested',
      status: 'delivered',
      attempts: 1,
      last_status_code: 200,
      last_error: null,
      created_at: expect.any(String),
      last_attempt_at: expect.any(String),
      delivered_at: expect.any(String),
    });
    await sleep(300);
    expect(receiver.at(url)).toHaveLength(1);
    expect(await deliveriesOf(res.body.id)).toHaveLength(1);
  });

  it('retries a receiver that answers 500 twice: three attempts with the same webhook-id, each signed anew', async () => {
    const url = receiver.url([500, 500]);
    const res = await create({ url, events: ['approval.requested'] });
    await sendEvent(app.infra, org.orgId, 'approval.requested', { approval_id: 'apr_2' });
    const delivery = await deliveryWhen(res.body.id, (d) => d.status === 'delivered');
    const attempts = receiver.at(url);
    expect(attempts.map((r) => r.answered)).toEqual([500, 500, 200]);
    expect(new Set(attempts.map((r) => r.headers['webhook-id']))).toEqual(new Set([delivery.id]));
    expect(new Set(attempts.map((r) => r.body)).size).toBe(1);
    for (const attempt of attempts) expect(verifySignature(String(res.body.secret), attempt)).toBe(true);
    expect(delivery).toMatchObject({
      status: 'delivered',
      attempts: 3,
      last_status_code: 200,
      last_error: null,
    });
  });

  it('counts an attempt before it is sent: one in flight (which a crash could cut off) is already counted', async () => {
    const url = receiver.url(['hang']);
    const w = await subscribe(url);
    await sendEvent(app.infra, org.orgId, 'approval.requested', { approval_id: 'apr_in_flight' });
    await eventually(() => receiver.at(url).length === 1);
    // The receiver has the first attempt and has not answered: it is counted already.
    expect(await deliveriesOf(w.id)).toEqual([
      expect.objectContaining({ status: 'pending', attempts: 1, last_attempt_at: null }),
    ]);
    const delivered = await deliveryWhen(w.id, (d) => d.status === 'delivered');
    expect(delivered).toMatchObject({ attempts: 2, last_status_code: 200 });
    expect(receiver.at(url)).toHaveLength(2);
  });

  it('records each failed attempt with its status code while it keeps retrying, and stops on delete', async () => {
    const url = receiver.url([], 503);
    const w = await subscribe(url);
    await sendEvent(app.infra, org.orgId, 'approval.requested', { approval_id: 'apr_3' });
    const pending = await deliveryWhen(w.id, (d) => d.attempts >= 2);
    expect(pending).toMatchObject({
      status: 'pending',
      last_status_code: 503,
      last_error: 'receiver answered 503',
      delivered_at: null,
    });
    expect(pending.last_attempt_at).not.toBeNull();
    expect((await app.http.delete(`/v1/webhooks/${w.id}`, org.adminKey)).status).toBe(204);
    const row = await app.infra.knex('webhook_deliveries').where({ id: pending.id }).first();
    expect(row).toMatchObject({ status: 'failed', last_error: 'webhook deleted' });
    await sleep(200);
    const seen = receiver.at(url).length;
    await sleep(1_000);
    expect(receiver.at(url)).toHaveLength(seen);
  });

  it('sends a deleted webhook no new deliveries', async () => {
    const gone = receiver.url();
    const live = receiver.url();
    const deleted = await subscribe(gone);
    await subscribe(live);
    await app.http.delete(`/v1/webhooks/${deleted.id}`, org.adminKey);
    await sendEvent(app.infra, org.orgId, 'approval.requested', { approval_id: 'apr_4' });
    await eventually(() => receiver.at(live).length > 0);
    await sleep(200);
    expect(receiver.at(gone)).toEqual([]);
    expect(await app.infra.knex('webhook_deliveries').where({ webhook_id: deleted.id })).toEqual([]);
  });

  it('counts a receiver that does not answer in time as a failed attempt', async () => {
    const url = receiver.url([], 'hang');
    const w = await subscribe(url);
    await sendEvent(app.infra, org.orgId, 'approval.requested', { approval_id: 'apr_5' });
    const attempt = await deliveryWhen(w.id, (d) => d.last_attempt_at !== null);
    expect(attempt).toMatchObject({
      status: 'pending',
      last_status_code: null,
      last_error: 'no answer within 500 ms',
    });
    await app.http.delete(`/v1/webhooks/${w.id}`, org.adminKey);
  });

  it('records a 2xx answer with a body over 64 KiB delivered with its status code, on the first attempt', async () => {
    const url = receiver.url([{ status: 202, bytes: 70_000 }]);
    const w = await subscribe(url);
    await sendEvent(app.infra, org.orgId, 'approval.requested', { approval_id: 'apr_big' });
    const delivered = await deliveryWhen(w.id, (d) => d.last_attempt_at !== null);
    expect(delivered).toMatchObject({
      status: 'delivered',
      attempts: 1,
      last_status_code: 202,
      last_error: null,
    });
    await sleep(300);
    expect(receiver.at(url)).toHaveLength(1);
  });

  it('sends a 2xx answer of several megabytes through the sender as its status, without reading it all', async () => {
    const sender = new HttpWebhookSender(true);
    try {
      const url = receiver.url([
        { status: 200, bytes: 8 * 1024 * 1024 },
        { status: 204, bytes: 0 },
      ]);
      const envelope = {
        type: 'approval.requested',
        id: 'msg_y',
        created_at: new Date().toISOString(),
        data: {},
      };
      expect(await sender.post(url, {}, envelope, 2000)).toEqual({ status: 200 });
      expect(await sender.post(url, {}, envelope, 2000)).toEqual({ status: 204 });
    } finally {
      await sender.close();
    }
  });

  it('still counts a non-2xx answer over 64 KiB as a failed attempt', async () => {
    const url = receiver.url([{ status: 500, bytes: 70_000 }]);
    const w = await subscribe(url);
    await sendEvent(app.infra, org.orgId, 'approval.requested', { approval_id: 'apr_big_500' });
    const attempt = await deliveryWhen(w.id, (d) => d.last_attempt_at !== null);
    expect(attempt).toMatchObject({ last_status_code: null, last_error: 'answer larger than 65536 bytes' });
    await deliveryWhen(w.id, (d) => d.status === 'delivered');
  });

  it('does not follow a redirect: a 302 is a failed attempt', async () => {
    const url = receiver.url([], 'redirect');
    const w = await subscribe(url);
    await sendEvent(app.infra, org.orgId, 'approval.requested', { approval_id: 'apr_6' });
    const attempt = await deliveryWhen(w.id, (d) => d.last_attempt_at !== null);
    expect(attempt).toMatchObject({
      status: 'pending',
      last_status_code: 302,
      last_error: 'receiver answered 302',
    });
    await app.http.delete(`/v1/webhooks/${w.id}`, org.adminKey);
    expect(receiver.received.filter((r) => r.path === `${new URL(url).pathname}-moved`)).toEqual([]);
  });

  it('records a receiver that refuses the connection', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const w = await subscribe(`http://127.0.0.1:${port}/hook`);
    await sendEvent(app.infra, org.orgId, 'approval.requested', { approval_id: 'apr_7' });
    const attempt = await deliveryWhen(w.id, (d) => d.last_attempt_at !== null);
    expect(attempt).toMatchObject({ last_status_code: null, last_error: 'could not connect (ECONNREFUSED)' });
    await app.http.delete(`/v1/webhooks/${w.id}`, org.adminKey);
  });

  it('fails a delivery for good once the next attempt would fall past its 24 hours', async () => {
    const url = receiver.url([], 500);
    const w = await subscribe(url, ['invocation.finished']);
    const id = newId('msg');
    await app.infra.webhookStore.addDeliveries([
      {
        id,
        orgId: org.orgId,
        webhookId: w.id,
        type: 'invocation.finished',
        data: { invocation_id: 'inv_old' },
        createdAt: new Date(Date.now() - DELIVERY_WINDOW_MS + 50),
      },
    ]);
    await app.infra.queues.enqueue('webhook.deliver', { delivery_id: id, org_id: org.orgId }, id);
    const failed = await deliveryWhen(w.id, (d) => d.id === id && d.status === 'failed');
    expect(failed).toMatchObject({ attempts: 1, last_status_code: 500, last_error: 'receiver answered 500' });
    await sleep(500);
    expect(receiver.at(url)).toHaveLength(1);
    await app.http.delete(`/v1/webhooks/${w.id}`, org.adminKey);
  });

  it('delivers, once, a pending delivery whose job was lost, when the sweep runs', async () => {
    const url = receiver.url();
    const w = await subscribe(url, ['invocation.finished']);
    const delivery = (id: string, ageMs: number) => ({
      id,
      orgId: org.orgId,
      webhookId: w.id,
      type: 'invocation.finished' as const,
      data: { invocation_id: id },
      createdAt: new Date(Date.now() - ageMs),
    });
    // Rows written without their jobs, as by a process that died in between: one old enough to be
    // lost, one that may still be on its way (the fan-out enqueues right after writing).
    const lost = newId('msg');
    const recent = newId('msg');
    await app.infra.webhookStore.addDeliveries([delivery(lost, LOST_AFTER_MS + 1000), delivery(recent, 0)]);
    const sweep = () => sweepWebhooks(app.infra);
    expect(await sweep()).toBe(1);
    await deliveryWhen(w.id, (d) => d.id === lost && d.status === 'delivered');
    expect(await sweep()).toBe(0); // delivered: nothing pending is lost
    await sleep(300);
    expect(receiver.at(url).map((r) => r.headers['webhook-id'])).toEqual([lost]);
    expect((await deliveriesOf(w.id)).find((d) => d.id === recent)?.status).toBe('pending');
    await app.http.delete(`/v1/webhooks/${w.id}`, org.adminKey);
  });

  it('enqueues again a pending delivery whose job failed for good without ending it (killed mid-run too often)', async () => {
    const url = receiver.url();
    const w = await subscribe(url, ['invocation.finished']);
    const id = newId('msg');
    await app.infra.webhookStore.addDeliveries([
      {
        id,
        orgId: org.orgId,
        webhookId: w.id,
        type: 'invocation.finished',
        data: { invocation_id: 'inv_stalled' },
        createdAt: new Date(Date.now() - LOST_AFTER_MS - 1000),
      },
    ]);
    // Its job, kept in the failed set as BullMQ leaves a job that stalled past its limit.
    const queue = app.infra.queues.queue('webhooks');
    await queue.add(
      'webhook.deliver',
      { delivery_id: id, org_id: org.orgId },
      { jobId: id, delay: 3_600_000 },
    );
    const jobKey = `${app.infra.queues.bullPrefix}:webhooks`;
    await app.infra.redis
      .multi()
      .zrem(`${jobKey}:delayed`, id)
      .zadd(`${jobKey}:failed`, Date.now(), id)
      .hset(
        `${jobKey}:${id}`,
        'finishedOn',
        Date.now(),
        'failedReason',
        'job stalled more than allowable limit',
      )
      .exec();
    expect((await queue.getJob(id))?.finishedOn).toBeDefined();

    expect(await sweepWebhooks(app.infra)).toBe(1);
    await deliveryWhen(w.id, (d) => d.id === id && d.status === 'delivered');
    expect(receiver.at(url).map((r) => r.headers['webhook-id'])).toEqual([id]);
    await app.http.delete(`/v1/webhooks/${w.id}`, org.adminKey);
  });

  it('leaves alone a pending delivery whose job is waiting for its retry', async () => {
    // Four failures: pending, with its job delayed or running, for over a second (backoff from 100 ms).
    const url = receiver.url([500, 500, 500, 500], 200);
    const w = await subscribe(url, ['invocation.finished']);
    await sendEvent(app.infra, org.orgId, 'invocation.finished', { invocation_id: 'inv_retry' });
    const pending = await deliveryWhen(w.id, (d) => d.status === 'pending' && d.last_status_code === 500);
    await app.infra
      .knex('webhook_deliveries')
      .where({ id: pending?.id })
      .update({ created_at: new Date(Date.now() - LOST_AFTER_MS - 1000) }); // old enough to look lost
    const jobs = jest.spyOn(app.infra.queues, 'enqueue');
    try {
      expect(await sweepWebhooks(app.infra)).toBe(0);
      expect(jobs).not.toHaveBeenCalled();
    } finally {
      jobs.mockRestore();
    }
    await deliveryWhen(w.id, (d) => d.status === 'delivered');
    expect(receiver.at(url)).toHaveLength(5);
    await app.http.delete(`/v1/webhooks/${w.id}`, org.adminKey);
  });

  it('prunes deliveries that ended before the retention, and keeps pending and newer ones', async () => {
    const w = await subscribe(receiver.url(), ['invocation.finished']);
    const retentionMs = app.infra.config.CP_WEBHOOK_DELIVERY_RETENTION_DAYS * 86_400_000;
    // Ids carry their creation time, as the fan-out makes them, so rows from the past get past ids.
    const madeAgo = (ageMs: number) => {
      const createdAt = new Date(Date.now() - ageMs);
      const id = `${firstIdAt('msg', createdAt)}${randomBytes(8).toString('hex')}`;
      return { id, createdAt };
    };
    const rows = {
      oldDelivered: madeAgo(retentionMs + 60_000),
      oldFailed: madeAgo(retentionMs + 60_000),
      oldPending: madeAgo(retentionMs + 60_000),
      newerDelivered: madeAgo(retentionMs - 60_000),
    };
    await app.infra.webhookStore.addDeliveries(
      Object.values(rows).map(({ id, createdAt }) => ({
        id,
        orgId: org.orgId,
        webhookId: w.id,
        type: 'invocation.finished' as const,
        data: { invocation_id: id },
        createdAt,
      })),
    );
    const deliveries = () => app.infra.knex('webhook_deliveries');
    await deliveries()
      .whereIn('id', [rows.oldDelivered.id, rows.newerDelivered.id])
      .update({ status: 'delivered', delivered_at: new Date() });
    await deliveries().where({ id: rows.oldFailed.id }).update({ status: 'failed' });

    expect(await pruneWebhookDeliveries(app.infra)).toBe(2);
    const left = await deliveries().where({ webhook_id: w.id }).pluck('id');
    expect(left.sort()).toEqual([rows.oldPending.id, rows.newerDelivered.id].sort());
    expect(await pruneWebhookDeliveries(app.infra)).toBe(0);
    await app.http.delete(`/v1/webhooks/${w.id}`, org.adminKey);
  });

  it('never writes a secret to a log line', () => {
    const logs = app.logs.join('\n');
    expect(secrets.length).toBeGreaterThan(5);
    for (const secret of secrets) expect(logs).not.toContain(secret.slice(6));
  });
});

describe('webhooks: the retry schedule', () => {
  it('doubles from the base and waits at most an hour between attempts', () => {
    expect([1, 2, 3, 4].map((n) => retryDelayMs(n, 5000))).toEqual([5000, 10_000, 20_000, 40_000]);
    expect(retryDelayMs(11, 5000)).toBe(MAX_RETRY_DELAY_MS);
    expect(retryDelayMs(2000, 5000)).toBe(MAX_RETRY_DELAY_MS);
  });

  it('fits the 24 hours in fewer attempts than the job allows', () => {
    let elapsed = 0;
    let attempts = 1;
    for (; elapsed + retryDelayMs(attempts, 10) <= DELIVERY_WINDOW_MS; attempts++)
      elapsed += retryDelayMs(attempts, 10);
    expect(attempts).toBeLessThan(100);
  });
});
