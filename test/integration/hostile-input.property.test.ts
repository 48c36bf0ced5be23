import fc from 'fast-check';
import { z } from 'zod';
import { MAX_BODY_DEPTH } from '../../api/http/unstorable-input';
import type { RouteDef } from '../../api/http/route';
import { ROUTES } from '../../api/routes';
import { signupOrg, type SignedUpOrg } from '../support/factories';
import { callRaw, deepArray, deepObject, namesField, rawNumber, type ErrorReply } from '../support/raw-json';
import { VALID_BODIES } from '../support/route-bodies';
import { auditOf, storedRows } from '../support/stored-rows';
import { startTestApp, type TestApp } from '../support/test-app';

/**
 * Property: hostile values anywhere a route reads input (a body value or key, a query value, a
 * path parameter, a forged cursor) never get a 5xx; the unstorable ones (NUL, lone surrogate,
 * ±Infinity, nesting past MAX_BODY_DEPTH) get a 400 validation_error naming the field; and a
 * refused request leaves no row behind. Seeded, a few runs per route, so it stays fast.
 */
const SEED = 90_007;
const RUNS_PER_ROUTE = 14;
/** Routes that hash a password on every valid-looking body: fewer runs keep the file fast. */
const RUNS_WITH_PASSWORD = 5;

let app: TestApp;
let org: SignedUpOrg;
beforeAll(async () => {
  app = await startTestApp();
  org = await signupOrg(app.http);
});
afterAll(() => app.close());

/** Extra fields so that nested places (metadata, tool.arguments, arrays) can be hit too. */
const RICHER: Record<string, object> = {
  'POST /v1/agents': { metadata: { team: 'a', n: 1 }, tools: [{ name: 't' }], allowed_models: ['m'] },
  'PATCH /v1/agents/{id}': { metadata: { team: 'a' } },
  'POST /v1/sessions': { metadata: { team: 'a' }, max_calls: 5 },
  'POST /v1/llm/invoke': { metadata: { team: 'a' }, tool: { name: 't', arguments: { q: [1, 'x'] } } },
};

// ---- values ----

/** Ordinary text with a NUL or a lone surrogate in it: what PostgreSQL cannot store. */
const unstorableText = fc.oneof(
  fc.tuple(fc.string(), fc.string()).map(([a, b]) => `${a}\u0000${b}`),
  fc
    .tuple(fc.string(), fc.integer({ min: 0xd800, max: 0xdfff }), fc.string())
    .map(([a, unit, b]) => a + String.fromCharCode(unit) + b),
);

/** Always refused: unstorable text, a number JSON reads as ±Infinity, nesting past the limit. */
const unstorableValue: fc.Arbitrary<unknown> = fc.oneof(
  unstorableText,
  fc.constantFrom('1e400', '-1e400', '1e309', '-2e308').map(rawNumber),
  fc
    .integer({ min: MAX_BODY_DEPTH + 1, max: 6000 })
    .chain((levels) => fc.constantFrom(deepArray(levels), deepObject(levels))),
);

/** Odd but storable: may be accepted or refused, never a 5xx. */
const awkwardValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(5e-324, -5e-324, 1e-13, 1e-7, 1e300, -0, 2 ** 53 + 2, Number.MAX_VALUE, 0.1 + 0.2),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('', ' ', '%', '__proto__', 'constructor', "'; drop table orgs; --", '\u202e', '\ufffd'),
  fc.jsonValue({ maxDepth: 3 }),
  fc.integer({ min: 1, max: MAX_BODY_DEPTH - 3 }).map(deepArray),
);

/** Lone surrogates cannot be percent-encoded as UTF-8: send their (invalid) CESU-8 bytes instead. */
const encodeLoose = (text: string): string =>
  [...text]
    .map((ch) =>
      /^[\ud800-\udfff]$/.test(ch)
        ? [
            0xe0 | (ch.charCodeAt(0) >> 12),
            0x80 | ((ch.charCodeAt(0) >> 6) & 0x3f),
            0x80 | (ch.charCodeAt(0) & 0x3f),
          ]
            .map((b) => `%${b.toString(16).toUpperCase()}`)
            .join('')
        : encodeURIComponent(ch),
    )
    .join('');

/** Text for a URL, already encoded; only a NUL survives decoding as something unstorable. */
const urlText = fc.oneof(
  fc.oneof(unstorableText, fc.string({ unit: 'binary', maxLength: 40 })).map((s) => ({
    text: encodeLoose(s),
    refused: s.includes('\u0000'),
  })),
  fc
    .constantFrom('%', '%E0%A4%A', '%C0%80', '%ED%A0%80', '%FF', '%2F..%2F', '1e400', '-0', '%00')
    .map((text) => ({ text, refused: text === '%00' })),
);

/** Positions a forged cursor may hold that the database could not take. */
const forgedCursor = fc
  .oneof(
    unstorableText.map((s) => JSON.stringify(s)),
    fc.constantFrom('1e400', '-1e400'),
  )
  .map((json) => Buffer.from(`{"p":${json}}`).toString('base64url'));

// ---- where they go ----

type Mutation =
  | { at: 'body'; path: string[]; value: unknown; refused: boolean }
  | { at: 'bodyKey'; path: string[]; key: string; refused: boolean }
  | { at: 'query'; name: string; text: string; refused: boolean }
  | { at: 'path'; name: string; text: string; refused: boolean }
  | { at: 'cursor'; text: string };

/** Every place in a JSON value, as key paths: all nodes (to replace) and objects (to add a key to). */
function placesOf(value: unknown, path: string[] = []): { nodes: string[][]; objects: string[][] } {
  const nodes = [path];
  const objects = value !== null && typeof value === 'object' && !Array.isArray(value) ? [path] : [];
  if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      const inner = placesOf(item, [...path, key]);
      nodes.push(...inner.nodes);
      objects.push(...inner.objects);
    }
  }
  return { nodes, objects };
}

const baseBody = (name: string): Record<string, unknown> | undefined => {
  const valid = VALID_BODIES[name] as Record<string, unknown> | undefined;
  return valid && { ...valid, ...RICHER[name] };
};

const paramsOf = (route: RouteDef) => [...route.path.matchAll(/\{(\w+)\}/g)].map(([, p]) => p as string);
const queryNamesOf = (route: RouteDef) =>
  route.query instanceof z.ZodObject ? Object.keys(route.query.shape as object) : ['x'];

function mutations(route: RouteDef, name: string): fc.Arbitrary<Mutation> {
  const tagged = fc.oneof(
    unstorableValue.map((value) => ({ value, refused: true })),
    awkwardValue.map((value) => ({ value, refused: false })),
  );
  const options: fc.Arbitrary<Mutation>[] = [
    fc
      .tuple(fc.constantFrom(...queryNamesOf(route)), urlText)
      .map(([q, { text, refused }]) => ({ at: 'query', name: q, text, refused: refused && !!route.query })),
  ];
  const params = paramsOf(route);
  if (params.length > 0) {
    options.push(
      fc
        .tuple(fc.constantFrom(...params), urlText)
        .map(([p, { text, refused }]) => ({ at: 'path', name: p, text, refused })),
    );
  }
  if (queryNamesOf(route).includes('cursor'))
    options.push(forgedCursor.map((text) => ({ at: 'cursor', text })));
  const body = baseBody(name);
  if (route.body && body) {
    const { nodes, objects } = placesOf(body);
    options.push(
      fc.tuple(fc.constantFrom(...nodes), tagged).map(([path, t]) => ({ at: 'body', path, ...t })),
      fc
        .tuple(
          fc.constantFrom(...objects),
          fc.oneof(
            unstorableText.map((key) => ({ key, refused: true })),
            fc
              .string({ unit: 'binary', maxLength: 20 })
              .map((key) => ({ key, refused: key.includes('\u0000') })),
          ),
        )
        .map(([path, k]) => ({ at: 'bodyKey', path, ...k })),
    );
  }
  return fc.oneof(...options);
}

// ---- one request ----

const dummy = (param: string) => (param === 'model' ? 'my-model' : 'x_doesnotexist');

function withValue(body: unknown, path: string[], value: unknown): unknown {
  if (path.length === 0) return value;
  const copy = structuredClone(body) as Record<string, unknown>;
  let node = copy;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string, unknown>;
  node[path[path.length - 1] as string] = value;
  return copy;
}

function requestFor(route: RouteDef, name: string, m: Mutation): { url: string; body: unknown } {
  const url = route.path.replace(/\{(\w+)\}/g, (_all, p: string) =>
    m.at === 'path' && m.name === p ? m.text : dummy(p),
  );
  const query = m.at === 'query' ? `?${m.name}=${m.text}` : m.at === 'cursor' ? `?cursor=${m.text}` : '';
  let body: unknown = route.body ? baseBody(name) : undefined;
  if (m.at === 'body') body = withValue(body, m.path, m.value);
  if (m.at === 'bodyKey') body = withValue(body, [...m.path, m.key], 'v');
  return { url: url + query, body };
}

/** The field a refusal must name: the query or path name, or the first key of the body path. */
function fieldOf(m: Mutation): string | null {
  if (m.at === 'query' || m.at === 'path') return m.name;
  if (m.at === 'cursor') return 'cursor';
  // A body replaced whole has no field: the place named is somewhere inside it.
  return m.path[0] ?? (m.at === 'bodyKey' ? 'body' : null);
}

async function expectSound(m: Mutation, res: ErrorReply, before: Record<string, number>) {
  expect(res.status).toBeLessThan(500);
  if (m.at === 'cursor') expect([400, 404]).toContain(res.status);
  if ('refused' in m && m.refused) {
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('validation_error');
    const field = fieldOf(m);
    if (field) expect(namesField(res, field)).toBe(true);
    else expect(res.body.details?.length).toBeGreaterThan(0);
  }
  if (res.status >= 400) {
    expect(await storedRows(app.infra.knex)).toEqual(before);
    // A refusal may be audited as such (a failed login), never as something done.
    const audited = await auditOf(app.infra.knex, res.body.request_id);
    expect(audited.filter((a) => a.outcome !== 'failure')).toEqual([]);
  }
}

const hashesPassword = (name: string) => 'password' in (baseBody(name) ?? {});

const routes = ROUTES.map((route, index) => ({ name: `${route.method} ${route.path}`, route, index }));

describe('hostile input to every route: never a 5xx, unstorable values a 400, no write when refused', () => {
  it.each(routes)('$name', async ({ name, route, index }) => {
    const token = route.access.kind === 'public' ? undefined : org.adminKey;
    await fc.assert(
      fc.asyncProperty(mutations(route, name), async (m) => {
        const { url, body } = requestFor(route, name, m);
        const before = await storedRows(app.infra.knex);
        const res = await callRaw(app.http, route.method, url, body, token);
        await expectSound(m, res, before);
      }),
      { seed: SEED + index, numRuns: hashesPassword(name) ? RUNS_WITH_PASSWORD : RUNS_PER_ROUTE },
    );
  });
});
