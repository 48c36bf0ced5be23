import { RE2JS } from 're2js';
import type { CompiledPolicy, CompiledPolicySet, CompiledRule } from './compile-policies';
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
  verdict: Verdict;
  reason: PolicyReason;
  modify?: (action: Action) => Action;
  approval?: ApprovalRequirement;
}

const inList = (list: readonly string[] | undefined, value: string | null | undefined): boolean =>
  list === undefined || (value !== null && value !== undefined && list.includes(value));

/** Every listed dimension must match; one the action lacks (a tool list, no tool) does not. */
export const appliesTo = (a: AppliesTo, action: Action, context: EvaluationContext): boolean =>
  inList(a.agentIds, context.agentId) &&
  inList(a.models, action.model) &&
  inList(a.actionTypes, action.type) &&
  inList(a.tools, action.tool?.name);

const contents = (action: Action): string[] => (action.messages ?? []).map((m) => m.content);

function outcome(
  policy: Policy,
  rule: CompiledRule,
  verdict: Verdict,
  code: string,
  what: string,
): RuleOutcome {
  const message = `policy "${policy.name}" (${policy.id}) rule ${rule.index}: ${what}`;
  return { verdict, reason: { policyId: policy.id, ruleIndex: rule.index, code, message } };
}

/** The cost rules' input: unknown for an llm.invoke is judged as over any limit (fail closed). */
const costUnknown = (action: Action) => action.estimatedCostUsd === undefined && action.type === 'llm.invoke';

function approvalNeeded(rule: Extract<CompiledRule['rule'], { type: 'require_approval' }>, action: Action) {
  const { models, tools, minEstimatedCostUsd } = rule.when;
  if (models && !(action.model && models.includes(action.model))) return false;
  if (tools && !(action.tool && tools.includes(action.tool.name))) return false;
  if (minEstimatedCostUsd === undefined) return true;
  return action.estimatedCostUsd === undefined || action.estimatedCostUsd >= minEstimatedCostUsd;
}

/** One rule against one action: null when it has nothing to say. */
function evaluateRule(policy: Policy, compiled: CompiledRule, action: Action): RuleOutcome | null {
  const { rule, regex } = compiled;
  const say = (verdict: Verdict, code: string, what: string) =>
    outcome(policy, compiled, verdict, code, what);
  switch (rule.type) {
    case 'deny_models':
      return action.model && rule.models.includes(action.model)
        ? say('deny', 'model_denied', `model ${action.model} is denied`)
        : null;
    case 'allow_models_only':
      return action.model && !rule.models.includes(action.model)
        ? say('deny', 'model_not_in_policy_allowlist', `model ${action.model} is not in the allowed list`)
        : null;
    case 'deny_tools':
      return action.tool && rule.tools.includes(action.tool.name)
        ? say('deny', 'tool_denied', `tool ${action.tool.name} is denied`)
        : null;
    case 'deny_pattern':
      return contents(action).some((text) => regex?.matcher(text).find())
        ? say('deny', 'pattern_denied', 'a message matches a denied pattern')
        : null;
    case 'redact_pattern': {
      if (!contents(action).some((text) => regex?.matcher(text).find())) return null;
      const replacement = RE2JS.quoteReplacement(rule.replacement);
      const redact = (text: string) => (regex ? regex.matcher(text).replaceAll(replacement) : text);
      return {
        ...say('modify', 'redacted', 'matching text is redacted'),
        modify: (a) => ({ ...a, messages: a.messages?.map((m) => ({ ...m, content: redact(m.content) })) }),
      };
    }
    case 'max_tokens':
      return action.maxTokens !== undefined && action.maxTokens > rule.limit
        ? {
            ...say(
              'modify',
              'max_tokens_clamped',
              `max_tokens ${action.maxTokens} is clamped to ${rule.limit}`,
            ),
            modify: (a) => ({ ...a, maxTokens: Math.min(a.maxTokens ?? rule.limit, rule.limit) }),
          }
        : null;
    case 'max_cost_per_call_usd':
      if (costUnknown(action)) return say('deny', 'cost_unknown', 'the call has no cost estimate to judge');
      return action.estimatedCostUsd !== undefined && action.estimatedCostUsd > rule.limit
        ? say(
            'deny',
            'cost_per_call_exceeded',
            `estimated $${action.estimatedCostUsd} is over $${rule.limit}`,
          )
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
          }
        : null;
  }
}

const failedPolicy = (policy: Policy, why: string): RuleOutcome => ({
  verdict: 'deny',
  reason: {
    policyId: policy.id,
    ruleIndex: null,
    code: 'policy_evaluation_failed',
    message: `policy "${policy.name}" (${policy.id}) could not be evaluated (${why}); denied`,
  },
});

/** One policy's outcomes; an error while evaluating it is a deny naming it, never an allow. */
function evaluatePolicy(compiled: CompiledPolicy, action: Action, context: EvaluationContext): RuleOutcome[] {
  const { policy } = compiled;
  if (compiled.error) return [failedPolicy(policy, compiled.error)];
  try {
    if (!appliesTo(policy.appliesTo, action, context)) return [];
    return compiled.rules.flatMap((rule) => evaluateRule(policy, rule, action) ?? []);
  } catch (err) {
    return [failedPolicy(policy, err instanceof Error ? err.message : String(err))];
  }
}

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
 * The policy engine: a pure, synchronous function from an org's compiled policies, an action and
 * its context to a decision. The verdict is the strongest of the enforced policies' rules (deny >
 * require_approval > modify > allow) and its reasons are the rules of that verdict; a modify
 * applies every enforced modification in priority order (redactions, then clamps). Shadow
 * policies are evaluated alike but only recorded, with what each would have decided. Any error is
 * a deny that says so.
 */
export function evaluatePolicies(
  compiled: CompiledPolicySet,
  action: Action,
  context: EvaluationContext,
): PolicyDecision {
  const enforced: RuleOutcome[] = [];
  const shadowReasons: ShadowReason[] = [];
  for (const policy of compiled.policies) {
    const outcomes = evaluatePolicy(policy, action, context);
    if (policy.policy.mode === 'shadow')
      shadowReasons.push(...outcomes.map((o) => ({ ...o.reason, verdict: o.verdict })));
    else enforced.push(...outcomes);
  }
  const verdict = strongest(enforced);
  const deciding = enforced.filter((o) => o.verdict === verdict);
  const modifiedAction =
    verdict === 'modify' ? deciding.reduce((a, o) => (o.modify ? o.modify(a) : a), action) : null;
  return {
    verdict,
    reasons: deciding.map((o) => o.reason),
    shadowReasons,
    modifiedAction,
    approval: verdict === 'require_approval' ? approvalOf(deciding) : null,
    policyVersion: compiled.policyVersion,
  };
}
