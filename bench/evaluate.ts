/**
 * `npm run bench:evaluate -- [--seconds 10] [--concurrency 50] [--workers 1] [--only engine|evaluate|invoke]`:
 * the policy engine, in-process and behind `POST /v1/acs/evaluate`, with an org of 50 policies.
 *
 * (e) the engine alone: compilePolicies once, then evaluatePolicies in a loop over the actions;
 * (f) `POST /v1/acs/evaluate` (through the guardian queue, decision and audit entry written) at 1
 * and `concurrency` callers, on the stack of `npm run bench` (harness.ts); `npm run bench`'s sync
 * invoke in (g) an org without policies and (h) the org with the 50, on the same processes, twice in turn, so
 * that the difference is the guardian stage's share. Progress goes to stderr, figures to stdout.
 */
import { compilePolicies } from '../domain/policy/compile-policies';
import { evaluatePolicies } from '../domain/policy/evaluate-policies';
import type { Action, EvaluationContext } from '../domain/policy/policy';
import { ACTIONS, INVOKE_ACTION, policyBodies, toAction, toPolicy } from './evaluate-fixtures';
import {
  benchArgs,
  json,
  measure,
  report,
  setUpOrg,
  syncInvoker,
  withService,
  type Service,
} from './harness';
import { NEEDS_STORES } from './bench-cli';

// --only engine, evaluate or invoke runs that part only (for profiling it)
const args = benchArgs(`
npm run bench:evaluate -- [--seconds 10] [--concurrency 50] [--workers 1] [--only engine|evaluate|invoke]
  [--runtime node|tsx] [--warmup 15]

The policy engine alone (engine), POST /v1/acs/evaluate (evaluate) and governed invokes under the
same policies (invoke). --workers 0: the API process runs the workers too, as npm start does.

${NEEDS_STORES}`);
const SECONDS = args.seconds;
const CONCURRENCY = args.concurrency;
const WORKERS = args.workers;
const runs = (part: string) => !args.only || args.only === part;
const progress = (line: string) => process.stderr.write(`... ${line}\n`);

// --- (e) the engine alone ----------------------------------------------------------------------------------

/** Microseconds per evaluatePolicies call over `actions` in turn, for about `ms` after a warm-up. */
function engineMicros(
  actions: Action[],
  withPolicies: boolean,
  ms: number,
): { perCall: number; calls: number } {
  const context: EvaluationContext = { agentId: 'agt_bench', sessionId: null };
  const bodies = withPolicies ? policyBodies(context.agentId ?? '') : [];
  const compiled = compilePolicies({
    orgId: 'org_bench',
    policyVersion: 1,
    policies: bodies.map((b, i) => toPolicy(b, i, 'org_bench')),
  });
  const run = (n: number) => {
    for (let i = 0; i < n; i++) evaluatePolicies(compiled, actions[i % actions.length] as Action, context);
  };
  run(20_000);
  let calls = 0;
  const started = performance.now();
  while (performance.now() - started < ms) {
    run(1000);
    calls += 1000;
  }
  return { perCall: ((performance.now() - started) * 1000) / calls, calls };
}

function engineRows(): void {
  progress('the engine alone, in this process');
  const mix = engineMicros(ACTIONS.map(toAction), true, 2000);
  const invoke50 = engineMicros([INVOKE_ACTION], true, 1000);
  const invoke0 = engineMicros([INVOKE_ACTION], false, 1000);
  const label = '(e) engine alone, 50 policies';
  console.log(
    `${label.padEnd(34)}   in-process ${Math.round(1e6 / mix.perCall)
      .toString()
      .padStart(7)} decisions/s   ${mix.perCall.toFixed(1)} µs per decision (the action mix)`,
  );
  console.log(
    `${''.padEnd(34)}   the invoke's action: ${invoke50.perCall.toFixed(1)} µs with the 50 policies, ` +
      `${invoke0.perCall.toFixed(2)} µs with none`,
  );
}

// --- (f) POST /v1/acs/evaluate, (g)/(h) sync invokes ----------------------------------------------------------

async function createPolicies(service: Service, token: string, agentId: string): Promise<void> {
  progress('creating the 50 policies');
  for (const body of policyBodies(agentId)) {
    const res = await json(service.api, 'POST', '/v1/policies', token, body);
    if (res.status !== 201) throw new Error(`policy refused: ${JSON.stringify(res.body)}`);
  }
}

/** One evaluate call per turn, round the action mix; counts the verdicts it gets. */
function evaluator(service: Service, token: string, agentId: string, verdicts: Map<string, number>) {
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}` };
  const bodies = ACTIONS.map((action) => JSON.stringify({ agent_id: agentId, action }));
  let turn = 0;
  return async () => {
    const body = bodies[turn++ % bodies.length];
    const res = await service.api.request({ method: 'POST', path: '/v1/acs/evaluate', headers, body });
    const answer = (await res.body.json()) as { verdict?: string };
    if (res.statusCode !== 200 || !answer.verdict) return false;
    verdicts.set(answer.verdict, (verdicts.get(answer.verdict) ?? 0) + 1);
    return true;
  };
}

async function rows(service: Service, label: string, call: () => Promise<boolean>): Promise<void> {
  for (const callers of [1, CONCURRENCY]) {
    progress(`${label} at ${callers} caller(s): ${SECONDS + 1} s`);
    report(await measure(service, SECONDS, label, callers, call));
  }
}

async function serviceRows(service: Service): Promise<void> {
  // Two orgs on the same processes: the invoke rows differ only by the org's policies.
  const bare = await setUpOrg(service);
  const governed = await setUpOrg(service);
  await createPolicies(service, governed.admin, governed.agentId);
  if (runs('evaluate')) {
    const verdicts = new Map<string, number>();
    const evaluate = evaluator(service, governed.admin, governed.agentId, verdicts);
    await rows(service, '(f) POST /v1/acs/evaluate', evaluate);
    const total = [...verdicts.values()].reduce((a, b) => a + b, 0);
    const mix = [...verdicts].map(([v, n]) => `${v} ${Math.round((n * 100) / total)}%`).join(', ');
    console.log(`${''.padEnd(34)} verdicts: ${mix}`);
  }
  if (!runs('invoke')) return;
  // Twice in turn: whichever runs first pays for the processes' warm-up.
  for (let round = 0; round < 2; round++) {
    await rows(service, '(g) sync invoke, no policies', syncInvoker(service.api, bare.admin, bare.sessionId));
    await rows(
      service,
      '(h) sync invoke, 50 policies',
      syncInvoker(service.api, governed.admin, governed.sessionId),
    );
  }
}

async function main(): Promise<void> {
  console.log(
    `node ${process.version}, ${SECONDS} s per service row; ${args.warmUpSeconds} s of warm-up first, then 1 s per row\n`,
  );
  if (runs('engine')) engineRows();
  if (args.only === 'engine') return;
  await withService(
    {
      workers: WORKERS,
      connections: CONCURRENCY + 10,
      runtime: args.runtime,
      warmUpSeconds: args.warmUpSeconds,
    },
    serviceRows,
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
