import { approvalEventData } from '../approvals/approval-events';
import type { Approval } from '../approvals/approval';
import type { Invocation } from '../invocations/invocation';
import { microsToUsd } from '../pricing/cost';

/** A finished invocation as webhooks carry it: ids, outcome and cost, never prompt or answer text. */
export const finishedData = (i: Invocation): Record<string, unknown> => ({
  invocation_id: i.id,
  session_id: i.sessionId,
  agent_id: i.agentId,
  status: i.status,
  model: i.model,
  provider: i.provider,
  approval_id: i.approvalId,
  usage: i.usage ? { input_tokens: i.usage.inputTokens, output_tokens: i.usage.outputTokens } : null,
  cost_usd: microsToUsd(i.costMicros),
  error_code: i.error?.errorCode ?? null,
  completed_at: i.completedAt?.toISOString() ?? null,
});

/**
 * An approval as its `approval.requested` event tells of it: pending, whatever became of it since
 * (the event is made from the stored approval once its request is in the sealed log).
 */
export const requestedData = (a: Approval): Record<string, unknown> => ({
  ...approvalEventData(a),
  status: 'pending',
  resolved_at: null,
});
