import {
  finished,
  invoke,
  invokeBody,
  openSession,
  setUpInvoking,
  type InvocationBody,
  type InvokeSetup,
  type SessionBody,
} from '../support/invoke-fixtures';
import { startTestApp, type TestApp } from '../support/test-app';

/**
 * Each org's share of a process's policy evaluation time: one evaluation is bounded, but an org
 * sending many invokes whose (accepted) patterns are slow to scan used to hold every other org's
 * invoke behind all of them on the worker's event loop. Past its share, its jobs wait their turn
 * in the queue, and another org's invoke runs in between.
 */
let app: TestApp;
let heavy: InvokeSetup;
let light: InvokeSetup;

/** An accepted pattern (1,203 instructions) that never matches a run of `a`, and takes long to find out. */
const SLOW_PATTERN = '(?:\\w*a){400}[^\\w]';
/**
 * About half a second of scanning on the 2-core VM (2026-11-28): the heavy org's calls take four
 * times its burst of evaluation time, so some of them wait on a machine three times as fast too.
 */
const SLOW_TEXT = 'a'.repeat(12_000);
const HEAVY_CALLS = 8;

beforeAll(async () => {
  // Twice the default share: the waiting calls' turns come twice as fast.
  app = await startTestApp({ workers: true, env: { CP_ORG_EVALUATION_MS_PER_SECOND: '500' } });
  heavy = await setUpInvoking(app.http);
  light = await setUpInvoking(app.http);
  const policy = await app.http.post(
    '/v1/policies',
    { name: 'slow scan', rules: [{ type: 'deny_pattern', pattern: SLOW_PATTERN }] },
    heavy.org.adminKey,
  );
  expect(policy.status).toBe(201);
}, 60_000);
afterAll(() => app.close());

const sessionOf = (setup: InvokeSetup) =>
  openSession(app.http, setup.org.adminKey, { agent_id: setup.agentId, max_cost_usd: 1 });

it("another org's invoke runs while an org past its evaluation share waits; the waiting ones still run once", async () => {
  const key = heavy.org.adminKey;
  const session = await sessionOf(heavy);
  const body = invokeBody(session.id, { messages: [{ role: 'user', content: SLOW_TEXT }] });
  const submitted = await Promise.all(
    Array.from({ length: HEAVY_CALLS }, () => invoke(app.http, key, body, 0)),
  );
  expect(submitted.map((r) => r.status)).toEqual(Array(HEAVY_CALLS).fill(202));

  const other = await sessionOf(light);
  const quick = await invoke(app.http, light.org.adminKey, invokeBody(other.id), 30);
  expect(quick.body.status).toBe('succeeded');

  const outcomes: InvocationBody[] = [];
  for (const res of submitted) outcomes.push(await finished(app.http, key, res.body.id, 60_000));
  expect(outcomes.map((o) => o.status)).toEqual(Array(HEAVY_CALLS).fill('succeeded'));
  // The heavy org's first second of evaluations ran at once; the rest waited past the other org's call.
  const quickDone = Date.parse(quick.body.completed_at ?? '');
  const after = outcomes.filter((o) => Date.parse(o.completed_at ?? '') > quickDone);
  expect(after.length).toBeGreaterThanOrEqual(2);
  // Waiting its turn is not an attempt: each was called and charged once.
  const usage = (await app.http.get<SessionBody>(`/v1/sessions/${session.id}`, key)).body.usage;
  expect(usage).toMatchObject({ calls: HEAVY_CALLS, reserved_usd: 0 });
}, 90_000);
