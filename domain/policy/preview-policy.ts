import { createHash } from 'node:crypto';
import type { Clock } from '../clock';
import { invalidField } from '../errors';
import { turnsEvery } from '../next-turn';
import { microsToUsd } from '../pricing/cost';
import type { CallContext } from '../principal';
import type { ActionHistory, HistoryPosition, RecordedInvocation } from './action-history.port';
import {
  compilePolicyInTurns,
  patternInstructions,
  policyInstructions,
  withCompiled,
  type CompiledPolicySet,
} from './compile-policies';
import type { CompiledPolicies, PolicySetReader } from './compiled-policies';
import type { EvaluationRunner, PlainContext } from './evaluation-runner';
import { MAX_ORG_PATTERN_PROGRAM } from './limits';
import type { Action, Policy } from './policy';
import type { PolicyFields } from './policy-use-cases';
import type { Verdict } from './verdict';

/** At most this many recorded actions are replayed per call (the contract's bound). */
export const PREVIEW_MAX_ACTIONS = 10_000;
export const PREVIEW_MAX_EXAMPLES = 20;
/**
 * Rows read per query: the history is never held in memory all at once. A recorded prompt may be
 * about 1 MiB, so a page of 1,000 held up to about 1 GB and took seconds to read (QA: two previews
 * at once peaked at 3 GB, and one spent its 5 s reading before it replayed anything).
 */
export const PREVIEW_PAGE_SIZE = 100;
/**
 * Replaying stops after this long (`truncated`): an evaluation may take about a second of a core
 * with heavy patterns, and a preview replays up to 10,000 actions twice.
 */
export const PREVIEW_MAX_MS = 5_000;
/** The replay shares the API's event loop: it lets other requests run at least this often. */
const YIELD_EVERY_MS = 10;
/** The draft's id in reasons: it names no stored policy. */
export const DRAFT_POLICY_ID = 'pol_draft';

export interface PreviewDeps {
  /**
   * The org's policy_version, read for every preview: one made just after a policy change sees it
   * (the compiled sets alone trust the version they read for up to a second).
   */
  versions: Pick<PolicySetReader, 'policyVersion'>;
  /** The process's compiled sets, which the guardian uses too: the org's set is compiled once per version. */
  policies: Pick<CompiledPolicies<CompiledPolicySet>, 'forOrg'>;
  /** Runs the engine with heavy evaluations off the event loop (EvaluationRunner.replay). */
  evaluations: Pick<EvaluationRunner, 'replay'>;
  history: ActionHistory;
  clock: Clock;
}

export interface PreviewRequest {
  draft: PolicyFields;
  since: Date;
  /** Exclusive; now when absent. */
  until?: Date | undefined;
}

/** The bounds of one call; tests lower them. */
export interface PreviewLimits {
  maxActions: number;
  pageSize: number;
  /** Replaying time after which no further action is replayed (at least one is). */
  maxMs?: number;
}

export interface VerdictChange {
  invocationId: string;
  before: Verdict;
  after: Verdict;
}

export interface PolicyPreview {
  since: Date;
  until: Date;
  actionsReplayed: number;
  /** More actions were recorded in the window than were replayed (the oldest were). */
  truncated: boolean;
  changed: { total: number; byVerdict: Record<string, number> };
  /** The first changes, oldest first. */
  examples: VerdictChange[];
}

/**
 * The action the guardian stage built from the invocation (evaluate-invocation.ts `guardedAction`,
 * then org-policy-engine.ts `toAction`), rebuilt from the recorded row.
 */
export const recordedAction = (r: RecordedInvocation): Action => ({
  type: 'llm.invoke',
  model: r.model,
  messages: r.messages,
  maxTokens: r.maxTokens,
  estimatedCostUsd: microsToUsd(r.reserveMicros),
  ...(r.tool ? { tool: r.tool } : {}),
  ...(r.offeredTools ? { offeredTools: r.offeredTools } : {}),
  ...(r.toolChoice !== undefined ? { toolChoice: r.toolChoice } : {}),
});

function windowOf(request: PreviewRequest, now: Date): { since: Date; until: Date } {
  const until = request.until ?? now;
  if (request.since.getTime() < until.getTime()) return { since: request.since, until };
  throw request.until
    ? invalidField('until', 'until must be after since')
    : invalidField('since', 'since must be in the past (until defaults to now)');
}

/**
 * The org's compiled set with the draft added, as a policy of its own that no stored one can
 * shadow. Only the draft is compiled, a rule at a time between other requests' turns. A draft that
 * the org's pattern limit would refuse on create is refused here too (400).
 */
async function withDraft(
  current: CompiledPolicySet,
  draft: PolicyFields,
  now: Date,
): Promise<CompiledPolicySet> {
  if (!draft.enabled) return current;
  const policy: Policy = {
    ...draft,
    id: DRAFT_POLICY_ID,
    orgId: current.orgId,
    version: 1,
    createdAt: now,
    updatedAt: now,
  };
  const compiled = await compilePolicyInTurns(policy, turnsEvery());
  const drafted = policyInstructions(compiled);
  const total = patternInstructions(current) + drafted;
  if (drafted > 0 && total > MAX_ORG_PATTERN_PROGRAM)
    throw invalidField(
      'policy.rules',
      `with the draft, the patterns of the org's enabled policies would compile to ${total} instructions ` +
        `together, more than ${MAX_ORG_PATTERN_PROGRAM}: the draft could not be created as it is`,
    );
  return withCompiled(current, compiled, variantOf(draft));
}

/** Names a drafted set by its draft's content: the same draft previewed again is the same set. */
const variantOf = (draft: PolicyFields): string =>
  `draft:${createHash('sha256').update(JSON.stringify(draft)).digest('hex')}`;

/** Counts the verdicts the draft changes over a stream of recorded invocations. */
class Tally {
  replayed = 0;
  total = 0;
  readonly byVerdict: Record<string, number> = {};
  readonly examples: VerdictChange[] = [];

  constructor(
    private readonly evaluations: PreviewDeps['evaluations'],
    private readonly current: CompiledPolicySet,
    private readonly drafted: CompiledPolicySet,
  ) {}

  async replay(r: RecordedInvocation): Promise<void> {
    if (r.refusedByAgent) {
      this.replayed += 1;
      return;
    }
    const action = recordedAction(r);
    // Priced again as a modification leaves it, as the guardian stage does (QA: a draft's clamp
    // beside a cost rule previewed a deny that, enforced, was a modify).
    const costBasis = { price: r.price, ...(r.offeredTools ? { tools: r.offeredTools } : {}) };
    const context: PlainContext = { agentId: r.agentId, sessionId: r.sessionId, costBasis };
    const before = await this.verdictOf(this.current, action, context);
    const after = await this.verdictOf(this.drafted, action, context);
    this.replayed += 1;
    if (before === after) return;
    const key = `${before}->${after}`;
    this.byVerdict[key] = (this.byVerdict[key] ?? 0) + 1;
    this.total += 1;
    if (this.examples.length < PREVIEW_MAX_EXAMPLES)
      this.examples.push({ invocationId: r.id, before, after });
  }

  private async verdictOf(set: CompiledPolicySet, action: Action, context: PlainContext): Promise<Verdict> {
    return (await this.evaluations.replay(set, action, context)).verdict;
  }
}

/**
 * Impact preview: replays the org's invocations recorded in [since, until), oldest first, through
 * its current policies and through the same policies plus the draft, and counts the verdicts that
 * differ, for at most PREVIEW_MAX_ACTIONS actions and PREVIEW_MAX_MS of replaying (`truncated`
 * beyond either). Reads pages keyed on (created_at, id), one more row than it replays to know
 * whether the window held more. Writes nothing. Verdicts are the engine's (a require_approval is
 * reported as such); an evaluation that may be heavy runs in the policy thread, so that the replay
 * never holds the API's event loop for one (up to about 2 s each). Only the org's policies are
 * replayed, not the agent record's built-in checks: a call the agent record refused when it ran
 * is counted unchanged, as the guardian refuses it first.
 */
export async function previewPolicy(
  deps: PreviewDeps,
  ctx: CallContext,
  request: PreviewRequest,
  limits: PreviewLimits = { maxActions: PREVIEW_MAX_ACTIONS, pageSize: PREVIEW_PAGE_SIZE },
): Promise<PolicyPreview> {
  const orgId = ctx.principal.orgId;
  const now = deps.clock.now();
  const window = windowOf(request, now);
  const version = await deps.versions.policyVersion(orgId);
  const { compiled: current } = await deps.policies.forOrg(orgId, version);
  const tally = new Tally(deps.evaluations, current, await withDraft(current, request.draft, now));
  let after: HistoryPosition | null = null;
  let truncated = false;
  const started = performance.now();
  const outOfTime = () =>
    tally.replayed > 0 && performance.now() - started > (limits.maxMs ?? PREVIEW_MAX_MS);
  const between = turnsEvery(YIELD_EVERY_MS);
  for (;;) {
    const wanted = Math.min(limits.pageSize, limits.maxActions + 1 - tally.replayed);
    const rows = await deps.history.page(orgId, window, after, wanted);
    for (const row of rows) {
      if (tally.replayed === limits.maxActions || outOfTime()) {
        truncated = true;
        break;
      }
      await tally.replay(row);
      await between();
    }
    const last = rows.at(-1);
    if (truncated || !last || rows.length < wanted) break;
    after = { at: last.createdAt, id: last.id };
  }
  return {
    ...window,
    actionsReplayed: tally.replayed,
    truncated,
    changed: { total: tally.total, byVerdict: tally.byVerdict },
    examples: tally.examples,
  };
}
