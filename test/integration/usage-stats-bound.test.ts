import { microsToUsd } from '../../domain/pricing/cost';
import { MAX_USAGE_GROUPS } from '../../domain/stats/usage-stats';
import { signupOrg, type SignedUpOrg } from '../support/factories';
import { startTestApp, type TestApp } from '../support/test-app';
import type { Figures, UsageGroup as Group, UsageBody as Usage } from '../support/usage-stats-body';

/** A finished invocation as the stats read it; written straight to the table. */
interface Row {
  id: string;
  session_id: string;
  requested_by: string;
  status: 'succeeded' | 'failed' | 'denied' | 'cancelled';
  charged_calls: number;
  input_tokens: number;
  output_tokens: number;
  cost_micros: number;
  completed_at: string;
}

const SESSIONS = MAX_USAGE_GROUPS + 200;
const BASE = Date.parse('2025-06-01T00:00:00Z');
const STATUSES = ['succeeded', 'failed', 'denied', 'cancelled'] as const;
const REQUESTERS = ['key_a', 'key_b', 'key_c'];

/** Session n (1-based), keyed so that any collation sorts the keys as JavaScript does. */
const sessionKey = (n: number) => `s${String(n).padStart(5, '0')}`;
/** Session n's invocations finish within its own second after BASE: a window picks sessions. */
const endOfSession = (n: number) => new Date(BASE + n * 1000 + 500).toISOString();

/**
 * One invocation per session, two for every fifth. Costs and calls repeat (13 costs, 3 call
 * counts), so the groups at the cut tie on cost and on calls and only the key decides.
 */
function rowsOf(): Row[] {
  const rows: Row[] = [];
  for (let n = 1; n <= SESSIONS; n++) {
    for (let k = 0; k < (n % 5 === 0 ? 2 : 1); k++) {
      const i = rows.length;
      rows.push({
        id: `inv_bound_${i}`,
        session_id: sessionKey(n),
        requested_by: REQUESTERS[i % REQUESTERS.length] as string,
        status: STATUSES[i % STATUSES.length] as Row['status'],
        charged_calls: (n * 31 + k) % 3,
        input_tokens: (i * 13) % 50,
        output_tokens: (i * 7) % 40,
        cost_micros: ((n * 7919) % 13) * 1000,
        completed_at: new Date(BASE + n * 1000 + k).toISOString(),
      });
    }
  }
  return rows;
}

interface Summed extends Omit<Figures, 'cost_usd'> {
  cost_micros: number;
}

const sum = (rows: Row[]): Summed => ({
  calls: rows.reduce((n, r) => n + r.charged_calls, 0),
  succeeded: rows.filter((r) => r.status === 'succeeded').length,
  failed: rows.filter((r) => r.status === 'failed').length,
  denied: rows.filter((r) => r.status === 'denied').length,
  cancelled: rows.filter((r) => r.status === 'cancelled').length,
  input_tokens: rows.reduce((n, r) => n + r.input_tokens, 0),
  output_tokens: rows.reduce((n, r) => n + r.output_tokens, 0),
  cost_micros: rows.reduce((n, r) => n + r.cost_micros, 0),
});

const present = ({ cost_micros, ...counts }: Summed): Figures => ({
  ...counts,
  cost_usd: microsToUsd(cost_micros),
});

const byKey = (a: { key: string }, b: { key: string }) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

const sessionOf = (r: Row) => r.session_id;

/** Every group, costliest first (then most calls, then key): the order groups are kept in. */
function ranked(rows: Row[], by: (r: Row) => string) {
  const keys = [...new Set(rows.map(by))];
  const groups = keys.map((key) => ({ key, ...sum(rows.filter((r) => by(r) === key)) }));
  return groups.sort((a, b) => b.cost_micros - a.cost_micros || b.calls - a.calls || byKey(a, b));
}

/** Groups as the answer shows them: sorted by key. */
const asAnswered = (groups: ReturnType<typeof ranked>): Group[] =>
  groups.sort(byKey).map(({ key, ...figures }) => ({ key, ...present(figures) }));

/** The groups the answer must hold: the first MAX_USAGE_GROUPS ranked. */
const expectedGroups = (rows: Row[], by: (r: Row) => string): Group[] =>
  asAnswered(ranked(rows, by).slice(0, MAX_USAGE_GROUPS));

/** Every session's group, whatever the bound. */
const everySession = (rows: Row[]): Group[] => asAnswered(ranked(rows, sessionOf));

/** The last group kept and the first left out tie on cost and calls: only the key parts them. */
function expectCutInATie(rows: Row[]): void {
  const groups = ranked(rows, sessionOf);
  const [last, first] = [groups[MAX_USAGE_GROUPS - 1], groups[MAX_USAGE_GROUPS]];
  expect([first?.cost_micros, first?.calls]).toEqual([last?.cost_micros, last?.calls]);
}

let app: TestApp;
let org: SignedUpOrg;
const rows = rowsOf();

beforeAll(async () => {
  app = await startTestApp();
  org = await signupOrg(app.http);
  const knex = app.infra.knex;
  await knex.raw(
    `insert into sessions (id, org_id, status, max_cost_micros, metadata, created_by, created_at, expires_at)
     select id, ?, 'closed', 1000000000, '{}', 'test', now(), now()
     from unnest(?::text[]) as id`,
    [org.orgId, [...new Set(rows.map((r) => r.session_id))]],
  );
  await knex.raw(
    `insert into invocations (id, org_id, session_id, requested_by_type, requested_by, status, model,
       provider, credential_ref, request, input_price_micros, output_price_micros, reserve_micros,
       reserve_tokens, input_tokens, output_tokens, cost_micros, charged_calls, created_at, updated_at,
       completed_at)
     select id, ?, session_id, 'api_key', requested_by, status, 'mock-1', 'mock', 'cred_none', '{}', 1, 1,
       0, 0, input_tokens, output_tokens, cost_micros, charged_calls, completed_at, completed_at, completed_at
     from json_to_recordset(?::json) as x(id text, session_id text, requested_by text, status text,
       charged_calls int, input_tokens bigint, output_tokens bigint, cost_micros bigint,
       completed_at timestamptz)`,
    [org.orgId, JSON.stringify(rows)],
  );
});
afterAll(() => app.close());

/** Usage of the sessions 1..last (their invocations finished in the window). */
const usageUpTo = async (last: number, groupBy: string) => {
  const window = `from=${new Date(BASE).toISOString()}&to=${endOfSession(last)}`;
  const res = await app.http.get<Usage>(`/v1/stats/usage?${window}&group_by=${groupBy}`, org.adminKey);
  expect(res.status).toBe(200);
  return res.body;
};

describe(`GET /v1/stats/usage with more than ${MAX_USAGE_GROUPS} groups`, () => {
  it(`answers the ${MAX_USAGE_GROUPS} costliest groups, sorted by key, and groups_truncated true`, async () => {
    expectCutInATie(rows);
    const body = await usageUpTo(SESSIONS, 'session');
    expect(body.groups_truncated).toBe(true);
    expect(body.groups).toHaveLength(MAX_USAGE_GROUPS);
    expect(body.groups).toEqual(expectedGroups(rows, sessionOf));
    const keys = body.groups.map((g) => g.key);
    expect(keys).toEqual([...keys].sort());
  });

  it('keeps the totals over every group, the ones left out included', async () => {
    const body = await usageUpTo(SESSIONS, 'session');
    expect(body.totals).toEqual(present(sum(rows)));
    const shown = body.groups.reduce((n, g) => n + g.calls, 0);
    expect(body.totals.calls).toBeGreaterThan(shown);
  });

  it('leaves out only the cheapest groups: none left out costs more than one shown', async () => {
    const body = await usageUpTo(SESSIONS, 'session');
    const shown = new Set(body.groups.map((g) => g.key));
    const cheapestShown = Math.min(...body.groups.map((g) => g.cost_usd));
    const leftOut = everySession(rows).filter((g) => !shown.has(g.key));
    expect(leftOut).toHaveLength(SESSIONS - MAX_USAGE_GROUPS);
    for (const g of leftOut) expect(g.cost_usd).toBeLessThanOrEqual(cheapestShown);
  });
});

describe(`GET /v1/stats/usage with at most ${MAX_USAGE_GROUPS} groups`, () => {
  it(`answers all ${MAX_USAGE_GROUPS} groups of a window holding exactly that many, groups_truncated false`, async () => {
    const inWindow = rows.filter((r) => r.completed_at < endOfSession(MAX_USAGE_GROUPS));
    const body = await usageUpTo(MAX_USAGE_GROUPS, 'session');
    expect(body.groups_truncated).toBe(false);
    expect(body.groups).toHaveLength(MAX_USAGE_GROUPS);
    expect(body.groups).toEqual(everySession(inWindow));
    expect(body.totals).toEqual(present(sum(inWindow)));
  });

  it(`truncates a window of ${MAX_USAGE_GROUPS + 1} groups by one`, async () => {
    const inWindow = rows.filter((r) => r.completed_at < endOfSession(MAX_USAGE_GROUPS + 1));
    expectCutInATie(inWindow);
    const body = await usageUpTo(MAX_USAGE_GROUPS + 1, 'session');
    expect(body.groups_truncated).toBe(true);
    expect(body.groups).toEqual(expectedGroups(inWindow, sessionOf));
    expect(body.totals).toEqual(present(sum(inWindow)));
  });

  it('answers every group of a small grouping, groups_truncated false', async () => {
    const body = await usageUpTo(SESSIONS, 'key');
    expect(body.groups_truncated).toBe(false);
    expect(body.groups.map((g) => g.key)).toEqual(REQUESTERS);
    expect(body.groups).toEqual(expectedGroups(rows, (r) => r.requested_by));
    expect(body.totals).toEqual(present(sum(rows)));
  });

  it('answers groups_truncated false without group_by', async () => {
    const res = await app.http.get<Usage>(
      `/v1/stats/usage?from=${new Date(BASE).toISOString()}&to=${endOfSession(SESSIONS)}`,
      org.adminKey,
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ groups: [], groups_truncated: false, totals: present(sum(rows)) });
  });
});
