import type { Invocation } from '../../domain/invocations/invocation';
import type { CompletionSignal } from '../../domain/invocations/signals';
import { microsToUsd } from '../../domain/pricing/cost';
import type { WebhookPublisher } from '../../domain/webhooks/webhook-publisher';

/** A finished invocation as webhooks carry it: ids, outcome and cost, never prompt or answer text. */
const finishedData = (i: Invocation): Record<string, unknown> => ({
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

/** Tells waiting clients (the completion hub) and the org's webhooks that an invocation finished. */
export const announcing = (hub: CompletionSignal, webhooks: WebhookPublisher): CompletionSignal => ({
  finished: async (invocation) => {
    webhooks.publish(invocation.orgId, 'invocation.finished', finishedData(invocation));
    await hub.finished(invocation);
  },
});
