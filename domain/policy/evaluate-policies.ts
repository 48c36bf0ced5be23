import { RE2JS } from 're2js';
import { hasOtherForms, mapActionTexts, textsOf, toolKey, toolKeysOf, toolNamesOf } from './action-tools';
import { foldText } from './fold-text';
import { REDACTION_PASSES, redactionOf, type Redaction } from './redaction';
import { modelListOf } from './model-names';
import { perList } from './per-list';
import type { CompiledPolicy, CompiledPolicySet, CompiledRule } from './compile-policies';
import { PatternBudget } from './pattern-budget';
import type {
  Action,
  ApprovalRequirement,
  AppliesTo,
  EvaluationContext,
  Policy,
  PolicyDecision,
  PolicyReason,
  ShadowReason,
} from './policy';
import type { Verdict } from './verdict';

/** Strength of each verdict: deny > require_approval > modify > allow. */
const RANK: Record<Verdict, number> = { allow: 0, modify: 1, require_approval: 2, deny: 3 };

/** What one rule decided: its verdict, reason and, for modify, how it changes the action. */
interface RuleOutcome {
  policy: Policy;
  verdict: Verdict;
  reason: PolicyReason;
  modify?: (action: Action) => Action;
  /** A redaction's rule at work, for the folded step (`refoldAll`) and the passes after (`settleRedacted`). */
  redaction?: Redaction;
  approval?: ApprovalRequirement;
  /** Said for the cost asked (a cost rule over its limit, an approval over its minimum): see repricedLater. */
  costJudged?: true;
}

const inList = (list: readonly string[] | undefined, value: string | null | undefined): boolean =>
  list === undefined || (value !== null && value !== undefined && list.includes(value));

/** A rule's tool list as keys (toolKey). */
const keysOf = perList((list): ReadonlySet<string> => new Set(list.map(toolKey)));

/**
 * An action's type as rules compare it: folded and in lower case, as tool names are, since an
 * evaluate's caller names it (QA: "Tool.Call" and "tool\u200b.call" escaped a policy scoped to
 * tool.call, and "LLM.INVOKE" its cost rule's fail-closed deny).
 */
const typeKey = (action: Action): string => toolKey(action.type);
const isInvoke = (action: Action): boolean => typeKey(action) === 'llm.invoke';

/** The first of the action's tools (action-tools.ts) that `list` names, if any. */
const listedTool = (list: readonly string[], action: Action): string | undefined => {
  const keys = keysOf(list);
  const at = toolKeysOf(action).findIndex((key) => keys.has(key));
  return at === -1 ? undefined : toolNamesOf(action)[at];
};

/** Whether `list` names the action's model, or the alias a dated snapshot of it is (model-names.ts). */
const listedModel = (list: readonly string[], action: Action): boolean =>
  !!action.model && modelListOf(list).has(action.model);

/**
 * Every listed dimension must match; one the action lacks (a tool list, no tool) does not. A tool
 * list matches when any tool the action involves is on it.
 */
export const appliesTo = (a: AppliesTo, action: Action, context: EvaluationContext): boolean =>
  inList(a.agentIds, context.agentId) &&
  (a.models === undefined || listedModel(a.models, action)) &&
  (a.actionTypes === undefined || keysOf(a.actionTypes).has(typeKey(action))) &&
  (a.tools === undefined || listedTool(a.tools, action) !== undefined);

function outcome(
  policy: Policy,
  rule: CompiledRule,
  verdict: Verdict,
  code: string,
  what: string,
): RuleOutcome {
  const message = `policy "${policy.name}" (${policy.id}) rule ${rule.index}: ${what}`;
  return { policy, verdict, reason: { policyId: policy.id, ruleIndex: rule.index, code, message } };
}

/**
 * The cost rules' input, failing closed: an llm.invoke always has a price, so one without an
 * estimate is judged over any limit; so is an estimate that is not a finite number, whatever the
 * action. Other action types carry no cost unless they say so, and are then not judged.
 */
const costUnknown = (action: Action) =>
  action.estimatedCostUsd === undefined ? isInvoke(action) : !Number.isFinite(action.estimatedCostUsd);

/** True unless `value` is a number within `limit` (a NaN is never within). */
const over = (value: number, limit: number) => !(value <= limit);

function approvalNeeded(rule: Extract<CompiledRule['rule'], { type: 'require_approval' }>, action: Action) {
  const { models, tools, minEstimatedCostUsd } = rule.when;
  if (models && !listedModel(models, action)) return false;
  if (tools && listedTool(tools, action) === undefined) return false;
  if (minEstimatedCostUsd === undefined) return true;
  // A cost it cannot judge (none, or not a number) asks a person rather than letting it through.
  const cost = action.estimatedCostUsd;
  return cost === undefined || !(cost < minEstimatedCostUsd);
}

/** A pattern rule's compiled regex; one missing is an error (a deny), never a silent non-match. */
function compiledRegex({ regex, index }: CompiledRule): RE2JS {
  if (!regex) throw new Error(`rule ${index} has no compiled pattern`);
  return regex;
}

/** One rule against one action: null when it has nothing to say. */
function evaluateRule(
  policy: Policy,
  compiled: CompiledRule,
  action: Action,
  budget: PatternBudget,
): RuleOutcome | null {
  const { rule } = compiled;
  const say = (verdict: Verdict, code: string, what: string) =>
    outcome(policy, compiled, verdict, code, what);
  switch (rule.type) {
    case 'deny_models':
      return listedModel(rule.models, action)
        ? say('deny', 'model_denied', `model ${action.model} is denied`)
        : null;
    case 'allow_models_only':
      // An llm.invoke always names its model: one an evaluate's caller left out fails closed, as a
      // cost rule does without an estimate (QA).
      if (!action.model && isInvoke(action))
        return say('deny', 'model_unknown', 'the call names no model to judge against the allowed list');
      return action.model && !rule.models.includes(action.model)
        ? say('deny', 'model_not_in_policy_allowlist', `model ${action.model} is not in the allowed list`)
        : null;
    case 'deny_tools': {
      const denied = listedTool(rule.tools, action);
      return denied !== undefined ? say('deny', 'tool_denied', `tool ${denied} is denied`) : null;
    }
    case 'deny_pattern': {
      const regex = compiledRegex(compiled);
      budget.spend(regex, action);
      return textsOf(action).some((text) => regex.matcher(text).find())
        ? say(
            'deny',
            'pattern_denied',
            'the text of a message, a tool call or an offered tool matches a denied pattern',
          )
        : null;
    }
    case 'redact_pattern': {
      const regex = compiledRegex(compiled);
      // The match here, and the rewrite should the modification apply.
      budget.spend(regex, action, 'redaction');
      if (!textsOf(action).some((text) => regex.matcher(text).find())) return null;
      // Applied by `modify`, which knows every redaction's replacement.
      return {
        ...say('modify', 'redacted', 'matching text is redacted'),
        redaction: redactionOf(regex, rule.replacement, budget),
      };
    }
    case 'max_tokens':
      return action.maxTokens !== undefined && over(action.maxTokens, rule.limit)
        ? {
            ...say(
              'modify',
              'max_tokens_clamped',
              `max_tokens ${action.maxTokens} is clamped to ${rule.limit}`,
            ),
            // Only ever lowers: an earlier, lower clamp stays.
            modify: (a) => ({
              ...a,
              maxTokens:
                a.maxTokens !== undefined && !over(a.maxTokens, rule.limit) ? a.maxTokens : rule.limit,
            }),
          }
        : null;
    case 'max_cost_per_call_usd':
      if (costUnknown(action)) return say('deny', 'cost_unknown', 'the call has no cost estimate to judge');
      return action.estimatedCostUsd !== undefined && action.estimatedCostUsd > rule.limit
        ? {
            ...say(
              'deny',
              'cost_per_call_exceeded',
              `estimated $${action.estimatedCostUsd} is over $${rule.limit}`,
            ),
            costJudged: true,
          }
        : null;
    case 'require_approval':
      return approvalNeeded(rule, action)
        ? {
            ...say('require_approval', 'approval_required', 'a person must approve this action'),
            approval: {
              policyId: policy.id,
              approversRequired: rule.approversRequired,
              timeoutSeconds: rule.timeoutSeconds,
            },
            ...(rule.when.minEstimatedCostUsd !== undefined ? { costJudged: true as const } : {}),
          }
        : null;
    default:
      // A rule this engine does not know (a newer writer, a corrupt row) must not be skipped.
      throw new Error(`unknown rule type "${(rule as { type?: unknown }).type}"`);
  }
}

const failedPolicy = (policy: Policy, why: string): RuleOutcome => ({
  policy,
  verdict: 'deny',
  reason: {
    policyId: policy.id,
    ruleIndex: null,
    code: 'policy_evaluation_failed',
    message: `policy "${policy.name}" (${policy.id}) could not be evaluated (${why}); denied`,
  },
});

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** One policy's outcomes; an error while evaluating it is a deny naming it, never an allow. */
function evaluatePolicy(
  compiled: CompiledPolicy,
  action: Action,
  context: EvaluationContext,
  budget: PatternBudget,
): RuleOutcome[] {
  const { policy } = compiled;
  if (compiled.error) return [failedPolicy(policy, compiled.error)];
  try {
    if (!appliesTo(policy.appliesTo, action, context)) return [];
    return compiled.rules.flatMap((rule) => evaluateRule(policy, rule, action, budget) ?? []);
  } catch (err) {
    return [failedPolicy(policy, errorText(err))];
  }
}

/**
 * Applies the modifications in order (priority, then id, then rule index): redactions touch only
 * messages and clamps only max_tokens, so this is the redactions in priority order, then the
 * clamp; then the redactions' folded step, all together (`refoldAll`). A modification that
 * throws is a deny naming its policy, like any evaluation error (the folded step's, the first
 * redaction's). Also says which redactions changed nothing, in either step: what the ones before
 * them took out held all their matches.
 */
function modify(
  outcomes: RuleOutcome[],
  action: Action,
  kept: readonly string[] = replacementsOf(outcomes),
  anew = false,
): { action: Action; idle: ReadonlySet<RuleOutcome> } | { failed: RuleOutcome } {
  let current = action;
  const idle = new Set<RuleOutcome>();
  for (const o of outcomes) {
    const change = o.redaction ? redacted(o.redaction, kept, anew) : o.modify;
    if (!change) continue;
    try {
      const before = current;
      current = change(current);
      if (o.redaction && sameTexts(before, current)) idle.add(o);
    } catch (err) {
      return { failed: failedPolicy(o.policy, errorText(err)) };
    }
  }
  const redactions = outcomes.filter((o) => o.redaction);
  try {
    return { action: refoldAll(redactions, current, kept, idle), idle };
  } catch (err) {
    return { failed: failedPolicy((redactions[0] as RuleOutcome).policy, errorText(err)) };
  }
}

/**
 * The last step of the redactions, taken together once each has run with the accents on: a text
 * in which a match still shows only once folded is sent folded, every redaction applied to it
 * again in order. Folding takes every accent off, so it waits for the redactions whose patterns
 * have accents (QA: "secret" folded "sécret Zürich-42" first, and "Zürich-42" met "Zurich-42"),
 * and it is one step for all, so a second rule that also needed it is not left out (QA:
 * "sécret pässword" sent "secret [P]").
 */
function refoldAll(
  redactions: RuleOutcome[],
  action: Action,
  kept: readonly string[],
  idle: Set<RuleOutcome>,
): Action {
  // Most actions are ASCII: nothing to fold, and no second walk of every text (and of every
  // tool call's arguments) on the invoke's path.
  if (redactions.length === 0 || !hasOtherForms(action)) return action;
  const rules = redactions.map((o) => o.redaction as Redaction);
  return mapActionTexts(action, (text) => {
    const folded = foldText(text);
    if (folded === text || !rules.some((r) => r.findsNew(folded, kept))) return text;
    return redactions.reduce((t, o) => {
      const next = (o.redaction as Redaction).rewriteNew(t, kept);
      if (next !== t) idle.delete(o);
      return next;
    }, folded);
  });
}

/** The replacements of the outcomes' redactions: what their later looks take for no new match. */
const replacementsOf = (outcomes: RuleOutcome[]): string[] =>
  outcomes.flatMap((o) => (o.redaction ? [o.redaction.replacement] : []));

/**
 * A redaction applied to a request's texts: its first pass (`rewrite`), or `anew`, once over what
 * is new in a request it already ran over (`settleRedacted`); then its plain form where a new
 * match shows only there. Matches that are part of copies of `kept` are not taken out (redaction.ts).
 */
const redacted = (r: Redaction, kept: readonly string[], anew: boolean) => (a: Action) =>
  mapActionTexts(a, (text) => r.keep(anew ? r.rewriteNew(text, kept) : r.rewrite(text, kept), kept));

const strongest = (outcomes: RuleOutcome[]): Verdict =>
  outcomes.reduce<Verdict>((v, o) => (RANK[o.verdict] > RANK[v] ? o.verdict : v), 'allow');

/** The strictest approval the matching rules ask for: most approvers, shortest timeout. */
function approvalOf(outcomes: RuleOutcome[]): ApprovalRequirement | null {
  const asked = outcomes.flatMap((o) => o.approval ?? []);
  const [first] = asked;
  if (!first) return null;
  return {
    policyId: first.policyId,
    approversRequired: Math.max(...asked.map((a) => a.approversRequired)),
    timeoutSeconds: Math.min(...asked.map((a) => a.timeoutSeconds)),
  };
}

/**
 * Pattern budgets of one evaluation. Shadow policies spend from a budget of their own: they never
 * change a verdict, so they must not use up what the enforced ones may scan. Without a shadow
 * budget, shadow policies are not evaluated.
 */
interface Budgets {
  enforce?: PatternBudget | undefined;
  shadow?: PatternBudget | undefined;
}

/** Every policy's outcomes for one action, the enforced apart from what shadow policies would do. */
function judge(compiled: CompiledPolicySet, action: Action, context: EvaluationContext, budgets: Budgets) {
  const enforced: RuleOutcome[] = [];
  const shadow: RuleOutcome[] = [];
  for (const policy of compiled.policies) {
    const { mode } = policy.policy;
    const budget = mode === 'shadow' ? budgets.shadow : budgets.enforce;
    if (!budget) continue;
    (mode === 'shadow' ? shadow : enforced).push(...evaluatePolicy(policy, action, context, budget));
  }
  return { enforced, shadow };
}

const shadowReasonsOf = (shadow: RuleOutcome[]): ShadowReason[] =>
  shadow.map((o) => ({ ...o.reason, verdict: o.verdict }));

/**
 * What the shadow policies say, each one's cost rules judged on the action as it would run were
 * that policy enforced: as the enforced modifications leave it, then its own (QA: a shadow cost
 * rule reported a deny its enforced twin would not make, beside an enforced clamp, then beside
 * its own, then under an enforced deny reached after the clamp). Only where an invoke can price
 * the action again, and, as enforced, not where a rule denies for more than cost (`run` null, or
 * the policy's own such denial). In the policies' order.
 */
function shadowOf(
  compiled: CompiledPolicySet,
  shadow: RuleOutcome[],
  run: Action | null,
  asked: Action,
  context: EvaluationContext,
  budget: PatternBudget,
): ShadowReason[] {
  if (!context.reestimate || run === null) return shadowReasonsOf(shadow);
  return shadowReasonsOf(
    compiled.policies
      .filter((p) => p.policy.mode === 'shadow')
      .flatMap((p) => shadowPolicyOf(p, shadow, { run, asked }, context, budget)),
  );
}

/** A policy's cost rules alone: they scan no text, so judging them again costs no pattern budget. */
const costRulesOf = (p: CompiledPolicy): CompiledPolicy => ({
  ...p,
  rules: p.rules.filter(
    ({ rule }) =>
      rule.type === 'max_cost_per_call_usd' ||
      (rule.type === 'require_approval' && rule.when.minEstimatedCostUsd !== undefined),
  ),
});

/** One shadow policy's outcomes, its cost rules judged as the action would run with it enforced. */
function shadowPolicyOf(
  p: CompiledPolicy,
  shadow: RuleOutcome[],
  { run, asked }: { run: Action; asked: Action },
  context: EvaluationContext,
  budget: PatternBudget,
): RuleOutcome[] {
  const said = shadow.filter((o) => o.policy.id === p.policy.id);
  const own = said.filter((o) => o.verdict === 'modify');
  if (own.length === 0 && run === asked) return said;
  // As enforced: a denial for more than cost keeps what the cost asked said (repricedLater).
  if (said.some((o) => o.verdict === 'deny' && !o.costJudged)) return said;
  const result = own.length > 0 ? modify(own, run) : { action: run };
  if ('failed' in result) return said;
  const judged = { ...result.action, estimatedCostUsd: estimateOf(result.action, context) };
  const again = evaluatePolicy(costRulesOf(p), judged, context, budget).filter((o) => o.costJudged);
  return [...said.filter((o) => !o.costJudged), ...again].sort(
    (a, b) => (a.reason.ruleIndex ?? -1) - (b.reason.ruleIndex ?? -1),
  );
}

/**
 * Whether what the action's cost said waits for the action as it will run: the invoke can price
 * a modified action again, as it reserves it, a modification (a `max_tokens` clamp) may change
 * its cost, a cost rule or an approval's minimum spoke, and every denial is a cost rule's. The
 * modified action is then judged for cost instead (QA: a clamp to 10 tokens beside a cost rule
 * was denied for the 1,000 tokens asked, which would never be reserved; an approval's
 * `min_estimated_cost_usd` held what the clamp brought under it). The evaluate endpoint's caller
 * gives its own estimate, which a modification does not change: what it says stands.
 */
const repricedLater = (enforced: RuleOutcome[], context: EvaluationContext): boolean =>
  context.reestimate !== undefined &&
  enforced.some((o) => o.costJudged) &&
  enforced.filter((o) => o.verdict === 'deny').every((o) => o.costJudged) &&
  enforced.some((o) => o.verdict === 'modify');

/** The caller's estimate of a modified action; one it cannot make is unknown, which cost rules deny. */
function estimateOf(modified: Action, context: EvaluationContext): number | undefined {
  if (!context.reestimate) return modified.estimatedCostUsd;
  try {
    return context.reestimate(modified);
  } catch {
    return NaN;
  }
}

/**
 * Rules judge the action as asked, so what a redaction makes of it is judged again: it can
 * lengthen the prompt past `max_cost_per_call_usd` or a `require_approval`'s
 * `min_estimated_cost_usd` (judged on the caller's new estimate), write text a `deny_pattern`
 * forbids, or rename a tool into one that needs approval. A clamp alone cannot: it changes no
 * text and lowers the cost, so it is judged again only for what the cost asked said: the cost
 * denials and approval minimums it may lift (`repricedLater`). It can also form again what a redaction takes out (QA: "x" taken out
 * after "secret" turned "secxret" into "secret", which was sent): the redactions that match the
 * redacted action are applied to it again, to what is new in it (not to their own replacements,
 * see redaction.ts), and it is judged again, until that changes nothing, up to REDACTION_PASSES
 * times, past which it is denied (QA: a re-formed "password=hunter2" went out past
 * `password=\S+` → "password=[REDACTED]", whose replacement its pattern matches). The enforced
 * denials and holds of the action as it will run, from what is left of the evaluation's budget,
 * and the redactions applied again.
 */
function settleRedacted(
  compiled: CompiledPolicySet,
  modified: Action,
  context: EvaluationContext,
  budget: PatternBudget,
  firstKept: readonly string[],
):
  | { action: Action; denied: RuleOutcome[]; held: RuleOutcome[]; redactedAgain: RuleOutcome[] }
  | { failed: RuleOutcome } {
  let action = modified;
  const redactedAgain: RuleOutcome[] = [];
  // Every replacement any redaction made so far (QA: with only this pass's, two rules that match
  // each other's replacements took turns until denied).
  const kept = new Set(firstKept);
  for (let pass = 1; ; pass++) {
    const judged = { ...action, estimatedCostUsd: estimateOf(action, context) };
    const { enforced } = judge(compiled, judged, context, { enforce: budget });
    const denied = enforced.filter((o) => o.verdict === 'deny');
    const again = enforced.filter((o) => o.redaction);
    replacementsOf(again).forEach((r) => kept.add(r));
    const result = again.length === 0 ? null : modify(again, action, [...kept], true);
    if (result && 'failed' in result) return result;
    // Done when nothing matches, or what matches is only the redactions' own replacements: only
    // the request as it will run is denied, not a step on the way to it (QA).
    if (!result || sameTexts(result.action, action)) {
      const held = enforced.filter((o) => o.verdict === 'require_approval');
      return { action, denied, held, redactedAgain };
    }
    if (pass > REDACTION_PASSES)
      return {
        failed: failedPolicy(
          (again[0] as RuleOutcome).policy,
          `its redaction still changed the request after ${REDACTION_PASSES} passes`,
        ),
      };
    action = result.action;
    // Only those that changed something in this pass (QA: `sec` was named where `secret` took its match).
    const acted = again.filter((o) => !result.idle.has(o));
    redactedAgain.push(...notAmong(acted, redactedAgain));
  }
}

/**
 * The reasons of a modification, less the redactions that changed nothing (QA: a rule whose
 * matches an earlier one took out was listed, and `?policy_id=` showed it as having redacted).
 * If none changed anything, all are kept: the reasons say why the request was looked at.
 */
const withoutIdle = (deciding: RuleOutcome[], idle: ReadonlySet<RuleOutcome>): RuleOutcome[] => {
  const acting = deciding.filter((o) => !idle.has(o));
  return acting.length > 0 ? acting : deciding;
};

/** The reasons of a modification, then the redactions that acted again in later passes. */
const withActedAgain = (deciding: RuleOutcome[], redactedAgain: RuleOutcome[]): RuleOutcome[] => [
  ...deciding,
  ...notAmong(redactedAgain, deciding),
];

/** Whether two actions carry the same texts, in the same places (what redactions change). */
const sameTexts = (a: Action, b: Action): boolean => {
  const [x, y] = [textsOf(a), textsOf(b)];
  return x.length === y.length && x.every((text, i) => text === y[i]);
};

/** The outcomes of `found` that `among` does not already have (same policy and rule). */
const notAmong = (found: RuleOutcome[], among: RuleOutcome[]) =>
  found.filter(
    (f) =>
      !among.some(
        (a) => a.reason.policyId === f.reason.policyId && a.reason.ruleIndex === f.reason.ruleIndex,
      ),
  );

/**
 * The policy engine: a pure, synchronous function from an org's compiled policies, an action and
 * its context to a decision. Each rule is judged on the action as given; the verdict is the
 * strongest of the enforced policies' rules (deny > require_approval > modify > allow, whatever
 * their priority). The reasons are those of the verdict's level only, in priority order: under a
 * deny, the modifications that would have applied are not reported, as they do not happen. Under
 * a require_approval they do apply (modifiedAction), though only the approval's reasons are
 * reported: the approver is asked about the request exactly as it would run, redacted and
 * clamped. A modify composes every enforced modification, and the action a redaction makes is
 * judged again: a deny of it denies, and an approval it needs is asked for. Shadow policies are
 * evaluated alike but only recorded, each reason with the verdict it would have given; they never
 * change the verdict or the action.
 * Any error is a deny that says so and names its policy (policy_evaluation_failed).
 */
export function evaluatePolicies(
  compiled: CompiledPolicySet,
  action: Action,
  context: EvaluationContext,
): PolicyDecision {
  const budgets = { enforce: new PatternBudget(), shadow: new PatternBudget() };
  const judged = judge(compiled, action, context, budgets);
  const repriced = repricedLater(judged.enforced, context);
  const enforced = repriced ? judged.enforced.filter((o) => !o.costJudged) : judged.enforced;
  let verdict = strongest(enforced);
  let deciding = enforced.filter((o) => o.verdict === verdict);
  let modifiedAction: Action | null = null;
  // The action as the enforced modifications leave it, denied or not: what shadow cost rules judge.
  let asRun = action;
  if (verdict === 'modify' || verdict === 'require_approval') {
    // An approval is asked for the request as it would run: redacted and clamped.
    const modifying = enforced.filter((o) => o.verdict === 'modify');
    const result = modify(modifying, action);
    if ('failed' in result) [verdict, deciding] = ['deny', [result.failed]];
    else if (modifying.length > 0) {
      const redacted = modifying.some((o) => o.reason.code === 'redacted');
      const again =
        redacted || repriced
          ? settleRedacted(compiled, result.action, context, budgets.enforce, replacementsOf(modifying))
          : { action: result.action, denied: [], held: [], redactedAgain: [] };
      if (!('failed' in again)) asRun = again.action;
      if ('failed' in again) [verdict, deciding] = ['deny', [again.failed]];
      else if (again.denied.length > 0) [verdict, deciding] = ['deny', again.denied];
      else {
        modifiedAction = again.action;
        if (verdict === 'modify')
          deciding = withActedAgain(withoutIdle(deciding, result.idle), again.redactedAgain);
        // Held now for what the redaction made of it: alone, or beside the holds already asked for.
        if (again.held.length > 0) {
          deciding = verdict === 'modify' ? again.held : [...deciding, ...notAmong(again.held, deciding)];
          verdict = 'require_approval';
        }
      }
    }
  }
  return {
    verdict,
    reasons: deciding.map((o) => o.reason),
    // Where an enforced rule denies for more than cost, nothing is priced again (repricedLater).
    shadowReasons: shadowOf(
      compiled,
      judged.shadow,
      judged.enforced.some((o) => o.verdict === 'deny' && !o.costJudged) ? null : asRun,
      action,
      context,
      budgets.shadow,
    ),
    modifiedAction,
    approval: verdict === 'require_approval' ? approvalOf(deciding) : null,
    policyVersion: compiled.policyVersion,
  };
}
