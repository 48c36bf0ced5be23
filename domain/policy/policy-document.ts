import type { AppliesTo, Policy, Rule } from './policy';

/** A rule as the API writes it (snake_case), so audit entries read like the requests that made them. */
export function ruleDocument(rule: Rule): Record<string, unknown> {
  if (rule.type !== 'require_approval') return { ...rule };
  const { models, tools, minEstimatedCostUsd } = rule.when;
  return {
    type: rule.type,
    when: {
      ...(models ? { models } : {}),
      ...(tools ? { tools } : {}),
      ...(minEstimatedCostUsd !== undefined ? { min_estimated_cost_usd: minEstimatedCostUsd } : {}),
    },
    approvers_required: rule.approversRequired,
    timeout_seconds: rule.timeoutSeconds,
  };
}

export const appliesToDocument = (a: AppliesTo): Record<string, string[]> => ({
  ...(a.agentIds ? { agent_ids: a.agentIds } : {}),
  ...(a.models ? { models: a.models } : {}),
  ...(a.actionTypes ? { action_types: a.actionTypes } : {}),
  ...(a.tools ? { tools: a.tools } : {}),
});

/** The policy in the contract's shape: the API answers it and audit entries keep it as old and new. */
export const policyDocument = (p: Policy) => ({
  id: p.id,
  name: p.name,
  description: p.description,
  enabled: p.enabled,
  priority: p.priority,
  mode: p.mode,
  applies_to: appliesToDocument(p.appliesTo),
  rules: p.rules.map(ruleDocument),
  version: p.version,
  created_at: p.createdAt.toISOString(),
  updated_at: p.updatedAt.toISOString(),
});
