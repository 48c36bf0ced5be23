import type { Approval } from './approval';

/** An approval as webhooks carry it: ids, status and the summary, never the prompt text. */
export const approvalEventData = (a: Approval): Record<string, unknown> => ({
  approval_id: a.id,
  status: a.status,
  invocation_id: a.invocationId,
  session_id: a.sessionId,
  agent_id: a.agentId,
  policy_id: a.policyId,
  approvers_required: a.approversRequired,
  model: a.summary.model,
  tool: a.summary.tool?.name ?? null,
  estimated_cost_usd: a.summary.estimatedCostUsd,
  created_at: a.createdAt.toISOString(),
  expires_at: a.expiresAt.toISOString(),
  resolved_at: a.resolvedAt?.toISOString() ?? null,
});
