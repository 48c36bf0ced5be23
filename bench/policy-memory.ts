/**
 * `npm run bench:policy-memory -- [--orgs 80] [--phase both|main|thread] [--no-forced-gc]`: whether the memory of
 * the compiled policy sets a process keeps is bounded, as compiledSetsBudget (main heap) and the
 * policy thread's KEEP_SETS (16 sets, infra/policy/thread-sets.ts) say.
 *
 * Each of --orgs orgs has a policy set at its pattern limit (MAX_ORG_PATTERN_PROGRAM, patterns of
 * about 1,200 instructions, each distinct), served from memory. Phase "main" loads every org's set
 * once through a CompiledPolicies wired as infra/container.ts wires it; phase "thread" sends one
 * heavy evaluation per org to a real PolicyThread, which compiles and keeps sets of its own. Every
 * 5 orgs it forces a GC and prints the main heap, the process's RSS (both threads), the sets the
 * cache keeps and, in phase "thread", the thread's heap after a GC there (thread-heap.ts). The summary says whether each heap levelled off once its cache was full.
 * Needs no database: run it with node's --expose-gc, as the npm script does.
 */
import { getHeapStatistics } from 'node:v8';
import { systemClock } from '../domain/clock';
import { compiledWeight, compilePolicies, type CompiledPolicySet } from '../domain/policy/compile-policies';
import { CompiledPolicies, type PolicySetReader } from '../domain/policy/compiled-policies';
import { HEAVY_WORK } from '../domain/policy/evaluation-runner';
import { compiledSetsBudget } from '../domain/policy/limits';
import { worstPatternWork } from '../domain/policy/pattern-budget';
import type { Action, PolicySet } from '../domain/policy/policy';
import { PolicyThread } from '../infra/policy/policy-thread';
import { KEEP_SETS } from '../infra/policy/thread-sets';
import { benchOptions, exitWithUsage, positiveInt } from './bench-cli';
import { policySetAtLimit } from './heavy-sets';
import { ThreadHeap } from './thread-heap';

const USAGE = `
npm run bench:policy-memory -- [--orgs 80] [--phase both|main|thread] [--no-forced-gc]

Memory of the compiled policy sets of --orgs orgs at their pattern limit: in the main heap
(CompiledPolicies, phase main) and in the policy thread (phase thread). No database needed.
--no-forced-gc samples without forcing a GC first: what a running service's RSS shows.`;

const EVERY = 5;
/** As infra/container.ts sizes it: COMPILED_SETS_BUDGET, or less under a small heap limit. */
const BUDGET = compiledSetsBudget(getHeapStatistics().heap_size_limit);
const MB = 1024 * 1024;

function args() {
  const { text, flag } = benchOptions(USAGE, ['orgs', 'phase'], ['no-forced-gc']);
  const phase = text('phase') ?? 'both';
  if (!['both', 'main', 'thread'].includes(phase))
    exitWithUsage(USAGE, `--phase: both, main or thread, not "${phase}"`);
  return { orgs: positiveInt(USAGE, '--orgs', text('orgs'), 80), phase, collect: !flag('no-forced-gc') };
}

/** The sets, from memory: the reader the cache asks. */
class MemoryPolicySets implements PolicySetReader {
  constructor(private readonly sets: Map<string, PolicySet>) {}
  policyVersion = (orgId: string) => Promise.resolve(this.setOf(orgId).policyVersion);
  loadPolicySet = (orgId: string) => Promise.resolve(this.setOf(orgId));
  private setOf(orgId: string): PolicySet {
    const set = this.sets.get(orgId);
    if (!set) throw new Error(`no set for ${orgId}`);
    return set;
  }
}

/** Past HEAVY_WORK with any set at the limit (over 100,000 instructions a character), yet cheap to scan. */
const HEAVY_ACTION: Action = {
  type: 'llm.invoke',
  model: 'bench-model',
  messages: [{ role: 'user', content: 'no match here, forty characters of text.' }],
};

interface Sample {
  orgs: number;
  heapMB: number;
  rssMB: number;
  threadMB?: number;
}

function gc(): void {
  const collect = (globalThis as { gc?: () => void }).gc;
  if (!collect) exitWithUsage(USAGE, 'run with node --expose-gc (npm run bench:policy-memory does)');
  collect();
}

/** `collect`: force a full GC first (else the heap holds whatever garbage V8 has not yet collected). */
function sampleMain(orgs: number, collect: boolean): Sample {
  if (collect) gc();
  const { heapUsed, rss } = process.memoryUsage();
  return { orgs, heapMB: heapUsed / MB, rssMB: rss / MB };
}

const mb = (n: number | undefined) => (n === undefined || Number.isNaN(n) ? '-' : n.toFixed(0));

/** `kept`: the sets the cache keeps, and their weight where known. */
function printSample(s: Sample, kept: { sets: number; weight?: number }): void {
  const thread = s.threadMB === undefined ? '' : `, thread heap ${mb(s.threadMB)} MB`;
  const weight = kept.weight === undefined ? '' : `, weight ${kept.weight.toLocaleString('en')}`;
  console.log(
    `  ${String(s.orgs).padStart(4)} orgs: main heap ${mb(s.heapMB)} MB, RSS ${mb(s.rssMB)} MB${thread}; ` +
      `kept ${kept.sets} sets${weight}`,
  );
}

/**
 * Peak and final, the growth per org while the cache filled (`fullAt` orgs), and what it grew
 * from one sample after that (the first sets replaced, the allocator settled) to the end: the bound
 * holds if that is less than one more set's worth (or 5 MB, where no sets are kept).
 */
function summarize(
  name: string,
  samples: Sample[],
  base: number,
  fullAt: number,
  of: (s: Sample) => number,
  collect: boolean,
): void {
  const last = samples[samples.length - 1] as Sample;
  const filling = samples.filter((s) => s.orgs <= fullAt).pop();
  const full = samples.find((s) => s.orgs >= fullAt);
  const settled = samples.find((s) => s.orgs >= fullAt + EVERY);
  console.log(
    `  ${name}: before ${mb(base)} MB, peak ${mb(Math.max(...samples.map(of)))} MB, final ${mb(of(last))} MB`,
  );
  if (!filling || !full || !settled || settled === last)
    return console.log(`    (too few orgs to see it after its cache filled at ${fullAt})`);
  const perOrg = (of(filling) - base) / filling.orgs;
  const after = of(last) - of(settled);
  // Without a forced GC the heap saws up to a few times its live size between V8's full GCs.
  const verdict = !collect
    ? 'not judged without a forced GC (see the peak)'
    : after < Math.max(perOrg, 5)
      ? 'levelled off'
      : 'STILL GROWING';
  console.log(
    `    ${perOrg.toFixed(1)} MB per org over the first ${filling.orgs}; ${mb(of(full))} MB at ${full.orgs} orgs ` +
      `(full), ${mb(of(settled))} at ${settled.orgs}, ${mb(of(last))} at ${last.orgs}: ` +
      `${after >= 0 ? '+' : ''}${after.toFixed(0)} MB over the last ${last.orgs - settled.orgs} orgs, ${verdict}`,
  );
}

async function mainPhase(orgIds: string[], reader: PolicySetReader, collect: boolean): Promise<void> {
  const cache = new CompiledPolicies(reader, compilePolicies, systemClock, {
    weigh: compiledWeight,
    budget: BUDGET,
  });
  const base = sampleMain(0, collect);
  const samples: Sample[] = [];
  let fullAt = orgIds.length;
  console.log(`Main heap: CompiledPolicies, budget ${BUDGET.toLocaleString('en')}`);
  for (const [i, orgId] of orgIds.entries()) {
    await cache.forOrg(orgId);
    if (cache.kept.sets <= i && fullAt === orgIds.length) fullAt = i;
    if ((i + 1) % EVERY && i + 1 < orgIds.length) continue;
    samples.push(sampleMain(i + 1, collect));
    printSample(samples[samples.length - 1] as Sample, cache.kept);
  }
  summarize('main heap', samples, base.heapMB, fullAt, (s) => s.heapMB, collect);
  summarize('RSS', samples, base.rssMB, fullAt, (s) => s.rssMB, collect);
}

async function threadPhase(orgIds: string[], sets: Map<string, PolicySet>, collect: boolean): Promise<void> {
  const heap = new ThreadHeap();
  const thread = new PolicyThread((message, fields) => console.warn(message, fields));
  const threadHeap = async () => ((await heap.usedBytes(collect)) ?? NaN) / MB;
  const context = { agentId: null, sessionId: null };
  // An org without policies starts the thread and loads its code, so that its heap before any set is
  // known. Its empty set is kept there until the 16th org's pushes it out (hence `i + 2` sets below).
  await thread.evaluate({
    set: { orgId: 'org_0', policyVersion: 1, policies: [] },
    action: HEAVY_ACTION,
    context,
  });
  const threadBase = await threadHeap();
  const verdicts = new Map<string, number>();
  const samples: Sample[] = [];
  const base = sampleMain(0, collect);
  console.log(`Policy thread: one heavy evaluation per org, ${KEEP_SETS} sets kept there`);
  for (const [i, orgId] of orgIds.entries()) {
    const set = sets.get(orgId) as PolicySet;
    const { decision } = await thread.evaluate({ set, action: HEAVY_ACTION, context });
    const outcome = `${decision.verdict}${decision.reasons[0] ? ` (${decision.reasons[0].code})` : ''}`;
    verdicts.set(outcome, (verdicts.get(outcome) ?? 0) + 1);
    if ((i + 1) % EVERY && i + 1 < orgIds.length) continue;
    samples.push({ ...sampleMain(i + 1, collect), threadMB: await threadHeap() });
    printSample(samples[samples.length - 1] as Sample, { sets: Math.min(i + 2, KEEP_SETS) });
  }
  console.log(`  verdicts: ${[...verdicts].map(([v, n]) => `${n} ${v}`).join(', ')}`);
  summarize('thread heap', samples, threadBase, KEEP_SETS, (s) => s.threadMB ?? NaN, collect);
  summarize('main heap', samples, base.heapMB, KEEP_SETS, (s) => s.heapMB, collect);
  summarize('RSS', samples, base.rssMB, KEEP_SETS, (s) => s.rssMB, collect);
  await thread.close();
  heap.close();
}

async function main(): Promise<void> {
  const { orgs, phase, collect } = args();
  const t0 = performance.now();
  const orgIds = Array.from({ length: orgs }, (_, i) => `org_${i + 1}`);
  const sets = new Map(orgIds.map((id, i) => [id, policySetAtLimit(i + 1)]));
  const first = compilePolicies(sets.get('org_1') as PolicySet);
  describe(first);
  console.log(
    `${orgs} orgs built in ${((performance.now() - t0) / 1000).toFixed(1)} s; Node ${process.version}\n`,
  );
  if (phase !== 'thread') await mainPhase(orgIds, new MemoryPolicySets(sets), collect);
  if (phase === 'both')
    console.log("(RSS below still holds what the main phase freed: --phase thread for the thread's alone)");
  if (phase !== 'main') await threadPhase(orgIds, sets, collect);
}

/** What one org's set is, and a check that the bench's action is heavy for it (it goes to the thread). */
function describe(compiled: CompiledPolicySet): void {
  const rules = compiled.policies.reduce((n, p) => n + p.rules.length, 0);
  const weight = compiledWeight(compiled);
  const work = worstPatternWork(compiled, HEAVY_ACTION);
  if (work <= HEAVY_WORK) throw new Error(`the action is not heavy (${work} <= ${HEAVY_WORK})`);
  console.log(
    `Each org: ${compiled.policies.length} policies, ${rules} pattern rules, weight ${weight.toLocaleString('en')} ` +
      `(${Math.floor(BUDGET / weight)} fit the budget); the action's worst work ${work.toLocaleString('en')}`,
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
