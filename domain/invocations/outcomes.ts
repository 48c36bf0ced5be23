import { SYSTEM_ACTOR, type Actor } from '../audit/audit-event';
import { newAuditEvent } from '../audit/new-event';
import { microsToUsd } from '../pricing/cost';
import type { Invocation, InvocationError, InvocationStatus } from './invocation';
import type { FinishWrite, InvocationStore, WriteOutcome } from './invocation-store';
import type { CompletionSignal } from './signals';

const AUDIT_OUTCOME = {
  succeeded: 'success',
  failed: 'failure',
  denied: 'denied',
  cancelled: 'success',
} as const;

/** The audit entry of an invocation's final state change: usage and error, never message text. */
function finishEvent(
  invocation: Invocation,
  write: Omit<FinishWrite, 'event' | 'invocationId' | 'from'>,
  actor: Actor,
  requestId: string | null,
) {
  return newAuditEvent({
    orgId: invocation.orgId,
    actor,
    action: `llm.invoke.${write.status}`,
    resource: { type: 'invocation', id: invocation.id },
    at: write.at,
    requestId,
    outcome: AUDIT_OUTCOME[write.status],
    details: {
      session_id: invocation.sessionId,
      model: invocation.model,
      provider: invocation.provider,
      input_tokens: write.usage?.inputTokens ?? 0,
      output_tokens: write.usage?.outputTokens ?? 0,
      cost_usd: microsToUsd(write.costMicros),
      calls: write.chargedCalls,
      error_code: write.error?.errorCode ?? null,
    },
  });
}

export interface FinishOptions {
  actor?: Actor;
  requestId?: string | null;
}

/** A final write that charges nothing: failed, denied or cancelled before any usage. */
export function endWithoutUsage(
  invocation: Invocation,
  from: InvocationStatus[],
  status: 'failed' | 'denied' | 'cancelled',
  error: InvocationError | null,
  at: Date,
  options: FinishOptions & { chargedCalls?: number } = {},
): FinishWrite {
  const body = {
    status,
    output: null,
    usage: null,
    costMicros: 0,
    chargedCalls: options.chargedCalls ?? 0,
    error,
    at,
  };
  return {
    invocationId: invocation.id,
    from,
    ...body,
    event: finishEvent(
      invocation,
      body,
      options.actor ?? SYSTEM_ACTOR,
      options.requestId ?? invocation.requestId,
    ),
  };
}

/** A successful call, charged at `usage` and `costMicros` (already capped at the reservation). */
export function succeeded(
  invocation: Invocation,
  output: { role: 'assistant'; content: string },
  usage: { inputTokens: number; outputTokens: number },
  costMicros: number,
  at: Date,
): FinishWrite {
  const body = { status: 'succeeded' as const, output, usage, costMicros, chargedCalls: 1, error: null, at };
  return {
    invocationId: invocation.id,
    from: ['running'],
    ...body,
    event: finishEvent(invocation, body, SYSTEM_ACTOR, invocation.requestId),
  };
}

/**
 * Records a final outcome, then (only if it applied) runs `afterWrite` (returning a reservation)
 * and tells waiting clients. PostgreSQL goes first: it is the truth a ledger rebuild reads.
 */
export async function recordOutcome(
  deps: { store: InvocationStore; signal: CompletionSignal },
  invocation: Invocation,
  write: FinishWrite,
  afterWrite?: () => Promise<unknown>,
): Promise<WriteOutcome> {
  const written = await deps.store.finish(write);
  if (written !== 'applied') return written;
  await afterWrite?.();
  await deps.signal.finished(applyFinish(invocation, write));
  return written;
}

/** Applies a final write to the in-memory invocation, as the row now reads. */
export function applyFinish(invocation: Invocation, write: FinishWrite): Invocation {
  return {
    ...invocation,
    status: write.status,
    output: write.output,
    usage: write.usage,
    costMicros: write.costMicros,
    chargedCalls: write.chargedCalls,
    error: write.error,
    updatedAt: write.at,
    completedAt: write.at,
  };
}
