import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { feedWebhooksAfterSeal } from '../../workers/webhook-processor';
import {
  eventually,
  invoke,
  invokeBody,
  openSession,
  setUpInvoking,
  type InvokeSetup,
} from '../support/invoke-fixtures';
import { startLocalServer, type LocalServer } from '../support/local-server';
import { mintKey, signupOrg } from '../support/factories';
import { startTestApp, type TestApp } from '../support/test-app';
import { superuserQuery } from '../support/test-db';

/**
 * Webhooks are fed from the org's sealed audit log: the deliveries of a change's event are written
 * with the webhook's place in the log, in one transaction, so an event committed with its change is
 * never lost and never made twice, whatever fails between.
 */
let app: TestApp;
let setup: InvokeSetup;
let receiver: LocalServer;
const bodies = new Map<string, string[]>();

beforeAll(async () => {
  receiver = await startLocalServer((req, res) => {
    bodies.set(req.path, [...(bodies.get(req.path) ?? []), req.body]);
    res.writeHead(204).end();
  });
  app = await startTestApp({
    workers: true,
    captureLogs: true,
    env: { CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true', CP_ALLOW_PRIVATE_WEBHOOK_HOSTS: 'true' },
  });
  setup = await setUpInvoking(app.http, { models: ['mock-1'] });
}, 60_000);
afterAll(async () => {
  await app.close();
  await receiver.stop();
});

interface Delivery {
  id: string;
  type: string;
  status: string;
}

async function subscribe(): Promise<{ id: string; path: string }> {
  const path = `/feed-${randomBytes(4).toString('hex')}`;
  const res = await app.http.post<{ id: string }>(
    '/v1/webhooks',
    { url: receiver.url(path), events: ['invocation.finished'] },
    setup.org.adminKey,
  );
  expect(res.status).toBe(201);
  return { id: res.body.id, path };
}

/** Finished invocations, one at a time; their ids in the order they finished. */
async function invocations(n: number): Promise<string[]> {
  const session = await openSession(app.http, setup.org.adminKey, {
    agent_id: setup.agentId,
    max_cost_usd: 10,
  });
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await invoke(app.http, setup.org.adminKey, invokeBody(session.id));
    expect(res.body.status).toBe('succeeded');
    ids.push(res.body.id);
  }
  return ids;
}

/** Waits until every audit event of the org is sealed (its outbox is empty). */
const allSealed = () =>
  eventually(
    async () =>
      (await app.infra.knex('audit_outbox').where({ org_id: setup.org.orgId }).first('id')) === undefined,
  );

/** The invocation ids the receiver heard of at `path`, in the order the deliveries arrived. */
const heard = (path: string) =>
  (bodies.get(path) ?? []).map(
    (b) => (JSON.parse(b) as { data: { invocation_id: string } }).data.invocation_id,
  );

const deliveries = async (webhookId: string) =>
  (
    await app.http.get<{ data: Delivery[] }>(
      `/v1/webhooks/${webhookId}/deliveries?limit=100`,
      setup.org.adminKey,
    )
  ).body.data;

describe('webhooks fed from the sealed audit log', () => {
  it('tells of each finished invocation once, with its figures, and only of those after the webhook was made', async () => {
    const before = await invocations(2);
    // Sealed: the webhook starts after them (a change sealed after it was made is its to hear of).
    await allSealed();
    const hook = await subscribe();
    const after = await invocations(3);

    await eventually(() => heard(hook.path).length >= 3);
    expect(heard(hook.path).sort()).toEqual([...after].sort());
    for (const id of before) expect(heard(hook.path)).not.toContain(id);
    const shown = (
      await app.http.get<Record<string, unknown>>(`/v1/llm/invocations/${after[0]}`, setup.org.adminKey)
    ).body;
    const first = (bodies.get(hook.path) ?? [])
      .map((b) => JSON.parse(b) as { type: string; data: Record<string, unknown> })
      .find((e) => e.data.invocation_id === after[0]);
    expect(first).toMatchObject({
      type: 'invocation.finished',
      data: {
        invocation_id: after[0],
        status: 'succeeded',
        session_id: shown.session_id,
        agent_id: setup.agentId,
        model: 'mock-1',
        cost_usd: shown.cost_usd,
        usage: shown.usage,
        error_code: null,
      },
    });
    expect(await deliveries(hook.id)).toHaveLength(3);
    await app.http.delete(`/v1/webhooks/${hook.id}`, setup.org.adminKey);
  }, 60_000);

  it('loses no event while its deliveries cannot be written, and keeps sealing the audit log meanwhile', async () => {
    const hook = await subscribe();
    const name = `refuse_deliveries_${randomBytes(4).toString('hex')}`;
    await superuserQuery(
      app.db.url,
      `create function ${name}() returns trigger language plpgsql as $$ begin raise exception 'down'; end $$;
       create trigger ${name} before insert on webhook_deliveries for each row execute function ${name}();`,
    );
    let during: string[];
    try {
      during = await invocations(3);
      // Their entries are sealed although the webhook cannot be fed.
      await eventually(async () => {
        const { rows } = await app.infra.knex.raw<{ rows: unknown[] }>(
          'select 1 from audit_entries where resource_id = any(?)',
          [during],
        );
        return rows.length >= 3 * 3;
      });
      await eventually(() => app.logs.some((l) => l.includes('webhook not fed')));
      // Longer than any retry of a write made beside the change (the publisher before this gave up
      // after about 15 s): the events wait in the log however long it takes.
      await new Promise((r) => setTimeout(r, 16_000));
      expect(await deliveries(hook.id)).toEqual([]);
    } finally {
      await superuserQuery(
        app.db.url,
        `drop trigger ${name} on webhook_deliveries; drop function ${name}();`,
      );
    }
    await eventually(() => heard(hook.path).length >= 3);
    expect(heard(hook.path).sort()).toEqual([...during].sort());
    const rows = await eventually(async () => {
      const all = await deliveries(hook.id);
      return all.every((d) => d.status === 'delivered') && all;
    });
    expect(rows).toHaveLength(3);
    await app.http.delete(`/v1/webhooks/${hook.id}`, setup.org.adminKey);
  }, 60_000);

  it('makes each delivery once when several workers feed at the same time', async () => {
    const hook = await subscribe();
    const feeding = (async () => {
      const rounds: Promise<unknown>[] = [];
      for (let i = 0; i < 40; i++) {
        rounds.push(...[1, 2, 3].map(() => feedWebhooksAfterSeal(app.infra, Promise.resolve(0))));
        await new Promise((r) => setTimeout(r, 20));
      }
      await Promise.all(rounds);
    })();
    // Settled both, so no round outlives the test when the invocations fail.
    const [ran, fed] = await Promise.allSettled([invocations(6), feeding]);
    if (fed.status === 'rejected') throw fed.reason;
    if (ran.status === 'rejected') throw ran.reason;
    const ids = ran.value;
    await eventually(() => heard(hook.path).length >= 6);
    await new Promise((r) => setTimeout(r, 500));
    expect(heard(hook.path).sort()).toEqual([...ids].sort());
    expect(await deliveries(hook.id)).toHaveLength(6);
    await app.http.delete(`/v1/webhooks/${hook.id}`, setup.org.adminKey);
  }, 60_000);

  it('feeds the webhooks of every org while another org’s entries cannot be sealed', async () => {
    const hook = await subscribe();
    const stuck = await signupOrg(app.http, 'Unsealable');
    const name = `seal_refused_${randomBytes(4).toString('hex')}`;
    await superuserQuery(
      app.db.url,
      `alter table audit_entries add constraint ${name} check (org_id <> '${stuck.orgId}') not valid`,
    );
    try {
      // An entry of the stuck org waits in the outbox: every seal round fails on it.
      await mintKey(app.http, stuck.adminKey, ['read'], 'waits');
      await eventually(() => app.logs.some((l) => l.includes(name)));
      const ids = await invocations(2);
      await eventually(() => heard(hook.path).length >= 2);
      expect(heard(hook.path).sort()).toEqual([...ids].sort());
    } finally {
      await superuserQuery(app.db.url, `alter table audit_entries drop constraint ${name}`);
    }
    await app.http.delete(`/v1/webhooks/${hook.id}`, setup.org.adminKey);
  }, 60_000);

  it('starts a webhook made without a place (by the release before, in a rolling upgrade) at its org’s last entry, not its whole past', async () => {
    const before = await invocations(2);
    await allSealed();
    const hook = await subscribe();
    // As the release before made it: no place in the log.
    await app.infra.knex('webhooks').where({ id: hook.id }).update({ events_after_seq: null });
    await eventually(async () => {
      const row = await app.infra.knex('webhooks').where({ id: hook.id }).first('events_after_seq');
      return row?.events_after_seq !== null;
    });
    const after = await invocations(1);
    await eventually(() => heard(hook.path).length >= 1);
    await new Promise((r) => setTimeout(r, 500));
    expect(heard(hook.path)).toEqual(after);
    for (const id of before) expect(heard(hook.path)).not.toContain(id);
    await app.http.delete(`/v1/webhooks/${hook.id}`, setup.org.adminKey);
  }, 60_000);

  it('feeds the webhooks of every org while another org’s audit head is held by a stuck session', async () => {
    const hook = await subscribe();
    const stuck = await signupOrg(app.http, 'Held');
    await eventually(
      async () => (await app.infra.knex('audit_heads').where({ org_id: stuck.orgId })).length > 0,
    );
    const holder = new Client({ connectionString: app.db.url });
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query('select 1 from audit_heads where org_id = $1 for update', [stuck.orgId]);
      // The held org has events to seal; the seal round must not wait on it.
      await mintKey(app.http, stuck.adminKey, ['read'], 'waits');
      const started = Date.now();
      const ids = await invocations(2);
      await eventually(() => heard(hook.path).length >= 2, 10_000);
      expect(heard(hook.path).sort()).toEqual([...ids].sort());
      expect(Date.now() - started).toBeLessThan(8_000);
    } finally {
      await holder.query('rollback');
      await holder.end();
    }
    await app.http.delete(`/v1/webhooks/${hook.id}`, setup.org.adminKey);
  }, 60_000);

  it('spends no step on a webhook whose org logged nothing it subscribes to', async () => {
    const res = await app.http.post<{ id: string }>(
      '/v1/webhooks',
      { url: receiver.url('/approvals-only'), events: ['approval.requested'] },
      setup.org.adminKey,
    );
    const place = async () =>
      Number(
        (await app.infra.knex('webhooks').where({ id: res.body.id }).first('events_after_seq'))
          ?.events_after_seq,
      );
    const start = await place();
    await invocations(3);
    await allSealed();
    await new Promise((r) => setTimeout(r, 600));
    // Nine entries sealed past its place, none of them an approval request: not behind, not stepped.
    expect(await app.infra.webhookFeed.behind()).not.toContain(res.body.id);
    expect(await place()).toBe(start);
    await app.http.delete(`/v1/webhooks/${res.body.id}`, setup.org.adminKey);
  }, 60_000);
});
