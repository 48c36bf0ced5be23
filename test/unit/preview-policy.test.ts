import { DomainError } from '../../domain/errors';
import type {
  ActionHistory,
  HistoryPosition,
  RecordedInvocation,
} from '../../domain/policy/action-history.port';
import { compilePolicies } from '../../domain/policy/compile-policies';
import { CompiledPolicies } from '../../domain/policy/compiled-policies';
import { evaluatePolicies } from '../../domain/policy/evaluate-policies';
import { contextOf, EvaluationRunner, type OffLoopEvaluator } from '../../domain/policy/evaluation-runner';
import { EvaluationTime } from '../../domain/policy/evaluation-time';
import type { Policy, PolicySet, Rule } from '../../domain/policy/policy';
import type { PolicyFields } from '../../domain/policy/policy-use-cases';
import {
  DRAFT_POLICY_ID,
  PREVIEW_MAX_EXAMPLES,
  PREVIEW_PAGE_SIZE,
  previewPolicy,
  type PreviewLimits,
} from '../../domain/policy/preview-policy';
import type { CallContext } from '../../domain/principal';
import { testFields, testPolicy } from '../support/test-policy';

const ORG = 'org_1';
const NOW = new Date('2026-06-01T12:00:00Z');
const SINCE = new Date('2026-06-01T00:00:00Z');
const ctx: CallContext = {
  principal: { kind: 'api_key', id: 'key_1', orgId: ORG, scopes: ['policies:read'], tokenHash: 'h' },
  requestId: null,
};

/** `count` invocations a second apart from SINCE, on `model`, each reserving `reserveMicros`. */
const history = (count: number, model = 'm-a', reserveMicros = 1000): RecordedInvocation[] =>
  Array.from({ length: count }, (_, i) => ({
    id: `inv_${String(i).padStart(4, '0')}`,
    createdAt: new Date(SINCE.getTime() + i * 1000),
    agentId: 'agt_1',
    sessionId: 'ses_1',
    model,
    messages: [{ role: 'user' as const, content: 'hello' }],
    maxTokens: 16,
    reserveMicros,
    // $1 per million tokens, in and out.
    price: { inputMicrosPerMtok: 1_000_000, outputMicrosPerMtok: 1_000_000 },
    refusedByAgent: false,
  }));

/** An ActionHistory over an array, as the PostgreSQL one reads it: keyset pages in (createdAt, id). */
function fakeHistory(rows: RecordedInvocation[]) {
  const calls: { after: HistoryPosition | null; limit: number }[] = [];
  const reader: ActionHistory = {
    page: async (orgId, window, after, limit) => {
      calls.push({ after, limit });
      return rows
        .filter((r) => r.createdAt >= window.since && r.createdAt < window.until)
        .filter(
          (r) =>
            !after ||
            r.createdAt > after.at ||
            (r.createdAt.getTime() === after.at.getTime() && r.id > after.id),
        )
        .slice(0, limit);
    },
  };
  return { reader, calls };
}

const draftOf = (rules: Rule[]): PolicyFields => testFields(rules, { name: 'draft' });

/**
 * What a preview runs on, as the API process has it: the org's compiled sets (`loads` counts the
 * reads of the stored set) and an evaluation runner, with a policy thread when one is given.
 */
function depsOf(rows: RecordedInvocation[], current: Policy[] = [], thread: OffLoopEvaluator | null = null) {
  const { reader, calls } = fakeHistory(rows);
  const clock = { now: () => NOW };
  let loads = 0;
  let stored: PolicySet = { orgId: ORG, policyVersion: 3, policies: current };
  /** A policy change: the next version of the stored set. */
  const store = (policies: Policy[]) =>
    void (stored = { orgId: ORG, policyVersion: stored.policyVersion + 1, policies });
  const sets = {
    policyVersion: async () => stored.policyVersion,
    loadPolicySet: async () => ((loads += 1), stored),
  };
  const deps = {
    versions: sets,
    policies: new CompiledPolicies(sets, compilePolicies, clock),
    evaluations: new EvaluationRunner(new EvaluationTime(1_000), thread),
    history: reader,
    clock,
  };
  return { deps, calls, store, loads: () => loads };
}

function run(rows: RecordedInvocation[], rules: Rule[], limits?: PreviewLimits, current: Policy[] = []) {
  const { deps, calls } = depsOf(rows, current);
  const result = previewPolicy(deps, ctx, { draft: draftOf(rules), since: SINCE }, limits);
  return { result, calls };
}

const denyA: Rule[] = [{ type: 'deny_models', models: ['m-a'] }];

describe('previewPolicy', () => {
  it('stops at the cap: truncated, and actions_replayed is the cap', async () => {
    const { result, calls } = run(history(5), denyA, { maxActions: 3, pageSize: 2 });
    const preview = await result;
    expect(preview.truncated).toBe(true);
    expect(preview.actionsReplayed).toBe(3);
    expect(preview.changed).toEqual({ total: 3, byVerdict: { 'allow->deny': 3 } });
    expect(preview.examples.map((e) => e.invocationId)).toEqual(['inv_0000', 'inv_0001', 'inv_0002']);
    // Pages of 2 keyed on the last row read; the last page asks for the one row past the cap.
    expect(calls.map((c) => [c.after?.id ?? null, c.limit])).toEqual([
      [null, 2],
      ['inv_0001', 2],
    ]);
  });

  it('is not truncated when the window holds exactly the cap', async () => {
    const preview = await run(history(4), denyA, { maxActions: 4, pageSize: 2 }).result;
    expect(preview).toMatchObject({ truncated: false, actionsReplayed: 4, changed: { total: 4 } });
  });

  it(`reads at most ${PREVIEW_PAGE_SIZE} rows a query: a recorded prompt may be about 1 MiB`, async () => {
    const { result, calls } = run(history(250), denyA);
    expect(await result).toMatchObject({ truncated: false, actionsReplayed: 250 });
    expect(calls.map((c) => c.limit)).toEqual([PREVIEW_PAGE_SIZE, PREVIEW_PAGE_SIZE, PREVIEW_PAGE_SIZE]);
  });

  it('reads every page of a window under the cap', async () => {
    const { result, calls } = run(history(7), denyA, { maxActions: 100, pageSize: 3 });
    expect(await result).toMatchObject({ truncated: false, actionsReplayed: 7 });
    expect(calls.map((c) => c.after?.id ?? null)).toEqual([null, 'inv_0002', 'inv_0005']);
  });

  it(`counts every change but keeps the first ${PREVIEW_MAX_EXAMPLES} as examples, oldest first`, async () => {
    const preview = await run(history(PREVIEW_MAX_EXAMPLES + 5), denyA).result;
    expect(preview.changed.total).toBe(PREVIEW_MAX_EXAMPLES + 5);
    expect(preview.examples).toHaveLength(PREVIEW_MAX_EXAMPLES);
    expect(preview.examples[0]).toEqual({ invocationId: 'inv_0000', before: 'allow', after: 'deny' });
  });

  it('judges cost rules on the reservation recorded with each invocation, in USD', async () => {
    const limit: Rule[] = [{ type: 'max_cost_per_call_usd', limit: 0.5 }];
    const over = await run(history(2, 'm-a', 600_000), limit).result;
    expect(over.changed).toEqual({ total: 2, byVerdict: { 'allow->deny': 2 } });
    const under = await run(history(2, 'm-a', 400_000), limit).result;
    expect(under.changed.total).toBe(0);
  });

  it("judges cost rules on the request as a draft's clamp leaves it, priced at its recorded rates, as the guardian does (QA)", async () => {
    // 16 output tokens and 'hello' (5 + 4 + 8 + 64 = 81 input) at $1 per Mtok: $0.000097 worst case.
    const rows = history(2, 'm-a', 600_000).map((r) => ({ ...r, maxTokens: 600_000 }));
    const clampAndCap: Rule[] = [
      { type: 'max_tokens', limit: 16 },
      { type: 'max_cost_per_call_usd', limit: 0.5 },
    ];
    const clamped = await run(rows, clampAndCap).result;
    expect(clamped.changed).toEqual({ total: 2, byVerdict: { 'allow->modify': 2 } });
    const capOnly = await run(rows, [{ type: 'max_cost_per_call_usd', limit: 0.5 }]).result;
    expect(capOnly.changed).toEqual({ total: 2, byVerdict: { 'allow->deny': 2 } });
  });

  it('compares with the current set: a deny already in force is not a change', async () => {
    const current = testPolicy([{ type: 'max_tokens', limit: 8 }], { id: 'pol_current', orgId: ORG });
    const preview = await run(history(2), denyA, undefined, [current]).result;
    expect(preview.changed).toEqual({ total: 2, byVerdict: { 'modify->deny': 2 } });
  });

  it('stops replaying once its time is spent: truncated, with what it replayed counted', async () => {
    const preview = await run(history(5), denyA, { maxActions: 100, pageSize: 10, maxMs: 0 }).result;
    expect(preview).toMatchObject({ truncated: true, actionsReplayed: 1, changed: { total: 1 } });
  });

  it("lets other work run while it replays: it shares the API's event loop", async () => {
    const slow: Rule[] = [{ type: 'deny_pattern', pattern: '(?:\\w*a){20}[^\\w]' }];
    const rows = history(300).map((r) => ({
      ...r,
      messages: [{ role: 'user' as const, content: 'a'.repeat(2_000) }],
    }));
    let turns = 0;
    const counting = setInterval(() => (turns += 1), 1);
    const started = performance.now();
    try {
      const preview = await run(rows, slow, { maxActions: 1_000, pageSize: 1_000 }).result; // one page: no I/O
      expect(preview.actionsReplayed).toBe(300);
    } finally {
      clearInterval(counting);
    }
    const tookMs = performance.now() - started;
    expect(tookMs).toBeGreaterThan(50); // long enough that a loop never let go would show
    expect(turns).toBeGreaterThan(0);
  });

  it("takes the org's set from the process's compiled sets: two previews read and compile it once", async () => {
    const { deps, loads } = depsOf(history(2), [testPolicy(denyA, { id: 'pol_current', orgId: ORG })]);
    for (let i = 0; i < 2; i += 1) {
      const preview = await previewPolicy(deps, ctx, { draft: draftOf(denyA), since: SINCE });
      expect(preview.changed.total).toBe(0);
    }
    expect(loads()).toBe(1);
  });

  it('sees a policy change made just before it (the same second: the clock does not move here)', async () => {
    const { deps, store } = depsOf(history(2));
    const draft = { draft: draftOf(denyA), since: SINCE };
    expect((await previewPolicy(deps, ctx, draft)).changed.total).toBe(2);
    store([testPolicy(denyA, { id: 'pol_current', orgId: ORG })]);
    expect((await previewPolicy(deps, ctx, draft)).changed.total).toBe(0);
  });

  it('sends a heavy evaluation to the policy thread, the drafted set named apart from the stored one', async () => {
    const sent: PolicySet[] = [];
    const thread: OffLoopEvaluator = {
      evaluate: async ({ set, action, context }) => {
        sent.push(set);
        // The thread runs the same engine (policy-thread-main.ts).
        return {
          decision: evaluatePolicies(compilePolicies(set), action, contextOf(context, action)),
          ms: 1,
        };
      },
    };
    const heavy: Rule[] = [{ type: 'deny_pattern', pattern: '(?:\\w*a){400}[^\\w]' }];
    const rows = history(1).map((r) => ({
      ...r,
      messages: [{ role: 'user' as const, content: `${'a'.repeat(2_000)} ` }],
    }));
    const { deps } = depsOf(rows, [], thread);
    const preview = await previewPolicy(deps, ctx, { draft: draftOf(heavy), since: SINCE });
    expect(preview.changed).toEqual({ total: 1, byVerdict: { 'allow->deny': 1 } });
    // The current set has no pattern: evaluated here. The drafted one goes, with its variant.
    expect(sent).toHaveLength(1);
    expect(sent[0]?.policies.map((p) => p.id)).toEqual([DRAFT_POLICY_ID]);
    expect(sent[0]?.variant).toMatch(/^draft:[0-9a-f]{64}$/);
    expect(sent[0]?.policyVersion).toBe(3);
  });

  it('refuses a draft that takes the org past its pattern limit, naming policy.rules', async () => {
    const big = (n: number): Rule[] =>
      Array.from({ length: n }, (_, i) => ({ type: 'deny_pattern', pattern: `(?:\\w*a){400}[^\\w]${i}` }));
    // 50 of about 1,200 instructions are stored; 40 more take the org past 100,000.
    const current = [testPolicy(big(50), { id: 'pol_current', orgId: ORG })];
    const { deps } = depsOf(history(1), current);
    const refused = previewPolicy(deps, ctx, { draft: draftOf(big(40)), since: SINCE });
    await expect(refused).rejects.toMatchObject({
      code: 'validation_error',
      extra: { details: [{ path: 'policy.rules' }] },
    });
    const disabled = { ...draftOf(big(40)), enabled: false };
    await expect(previewPolicy(deps, ctx, { draft: disabled, since: SINCE })).resolves.toMatchObject({
      changed: { total: 0 },
    });
  });

  it('refuses a window that is empty or reversed, naming the field', async () => {
    const { deps } = depsOf([]);
    const reversed = previewPolicy(deps, ctx, { draft: draftOf(denyA), since: NOW, until: SINCE });
    await expect(reversed).rejects.toMatchObject({
      code: 'validation_error',
      extra: { details: [{ path: 'until' }] },
    });
    const future = previewPolicy(deps, ctx, { draft: draftOf(denyA), since: new Date(NOW.getTime() + 1) });
    await expect(future).rejects.toBeInstanceOf(DomainError);
    await expect(future).rejects.toMatchObject({ extra: { details: [{ path: 'since' }] } });
  });
});
