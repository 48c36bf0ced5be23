import { SYSTEM_ACTOR, type Actor } from '../audit/audit-event';
import { newAuditEvent } from '../audit/new-event';
import { microsToUsd } from '../pricing/cost';
import { NO_CHARGE, type AttemptCharge } from './attempt-charges';
import type { Invocation, InvocationError, InvocationOutput, InvocationStatus } from './invocation';
import type { FinishWrite, InvocationStore, WriteOutcome } from './invocation-store';
import type { CompletionSignal } from './signals';
import { storableText } from '../storable-text';

const AUDIT_OUTCOME = {
  running: 'failure',
  succeeded: 'success',
  failed: 'failure',
  denied: 'denied',
  cancelled: 'success',
} as const;

/** `running` is a failed provider attempt that a retry follows; the others end the invocation. */
const actionOf = (status: FinishWrite['status']) =>
  status === 'running' ? 'llm.invoke.attempt_failed' : `llm.invoke.${status}`;

type WriteBody = Omit<FinishWrite, 'event' | 'invocationId' | 'from'>;

/** What an invocation's totals are read from: its row, or the row as a write leaves it. */
export type InvocationTotals = Pick<Invocation, 'sessionId' | 'model' | 'provider'> &
  Pick<Invocation, 'usage' | 'costMicros' | 'chargedCalls' | 'providerAttempts'>;

/**
 * An invocation's totals as its audit entries carry them, so that its last entry, whoever wrote
 * it, reconciles with a bill (README, "What the audit log proves").
 */
export const totalsDetails = (t: InvocationTotals) => ({
  session_id: t.sessionId,
  model: t.model,
  provider: t.provider,
  input_tokens: t.usage?.inputTokens ?? 0,
  output_tokens: t.usage?.outputTokens ?? 0,
  cost_usd: microsToUsd(t.costMicros),
  calls: t.chargedCalls,
  provider_attempts: t.providerAttempts,
});

/**
 * The audit entry of a charged state change: the invocation's totals after it (usage, cost,
 * calls, attempts) and the error code, never message text; and what the provider reported for
 * this attempt, when that was more than the request allows (it was charged at the bound).
 */
function finishEvent(
  invocation: Invocation,
  write: WriteBody,
  charge: AttemptCharge,
  actor: Actor,
  requestId: string | null,
) {
  const after = applyCharge(invocation, write);
  const { reported } = charge;
  return newAuditEvent({
    orgId: invocation.orgId,
    actor,
    action: actionOf(write.status),
    resource: { type: 'invocation', id: invocation.id },
    at: write.at,
    requestId,
    outcome: AUDIT_OUTCOME[write.status],
    details: {
      ...totalsDetails({ ...invocation, ...after }),
      error_code: write.error?.errorCode ?? null,
      ...(reported
        ? {
            provider_reported_usage: {
              input_tokens: reported.inputTokens,
              output_tokens: reported.outputTokens,
            },
          }
        : {}),
    },
  });
}

export interface FinishOptions {
  actor?: Actor;
  requestId?: string | null;
}

export interface OutcomeInput {
  from: InvocationStatus[];
  status: FinishWrite['status'];
  output?: InvocationOutput | null;
  error: InvocationError | null;
  charge?: AttemptCharge;
  /** The provider attempt this write ends, if it ends one. */
  providerAttempt?: number | null;
}

/**
 * A charged state change of an invocation. Provider text (the answer, an error message) is made
 * storable first: PostgreSQL refuses NUL and lone surrogates, and a write that fails after the
 * provider answered must never be what decides the charge.
 */
export function outcomeWrite(
  invocation: Invocation,
  input: OutcomeInput,
  at: Date,
  options: FinishOptions = {},
): FinishWrite {
  const charge = input.charge ?? NO_CHARGE;
  const output = input.output ? storableOutput(input.output) : null;
  const error = input.error ? { ...input.error, message: storableText(input.error.message) } : null;
  const body: WriteBody = {
    status: input.status,
    output,
    usage: charge.usage,
    costMicros: charge.amounts.costMicros,
    chargedCalls: charge.amounts.calls,
    providerAttempt: input.providerAttempt ?? null,
    error,
    at,
  };
  return {
    invocationId: invocation.id,
    from: input.from,
    ...body,
    event: finishEvent(
      invocation,
      body,
      charge,
      options.actor ?? SYSTEM_ACTOR,
      options.requestId ?? invocation.requestId,
    ),
  };
}

/** The answer with every text the provider wrote made storable (its tool calls' too). */
const storableOutput = (output: InvocationOutput): InvocationOutput => ({
  ...output,
  content: storableText(output.content),
  ...(output.toolCalls
    ? {
        toolCalls: output.toolCalls.map((c) => ({
          id: storableText(c.id),
          type: c.type,
          function: { name: storableText(c.function.name), arguments: storableText(c.function.arguments) },
        })),
      }
    : {}),
});

/** A final write that charges nothing: failed, denied or cancelled before any provider attempt. */
export const endWithoutUsage = (
  invocation: Invocation,
  from: InvocationStatus[],
  status: 'failed' | 'denied' | 'cancelled',
  error: InvocationError | null,
  at: Date,
  options: FinishOptions = {},
): FinishWrite => outcomeWrite(invocation, { from, status, error }, at, options);

/**
 * Records a charged state change, then (only if it applied) runs `afterWrite` (settling the
 * reservation) and, when it ended the invocation, tells waiting clients. PostgreSQL goes first:
 * it is the truth a ledger rebuild reads. The settle and the signal are sent together, in that
 * order: on one Redis connection they share a round trip and Redis runs the settle first, so a
 * client hears of the end after the reservation is returned (but for the first settle after a
 * Redis restart, whose script ioredis sends again, milliseconds later). A settle that fails still
 * lets the client hear of an end PostgreSQL already holds; its reservation is the reaper's.
 */
/**
 * The outcome is recorded, and only what follows it failed: settling its charge in the cap
 * ledger (the reaper settles the reservation left behind at what the invocation was charged), or
 * telling its waiters (they read the row when their wait runs out).
 */
export class AfterRecording extends Error {
  constructor(
    readonly step: 'settling its charge in the cap ledger' | 'telling its waiters',
    readonly reason: unknown,
  ) {
    super(
      `the outcome is recorded; ${step} failed (${reason instanceof Error ? reason.message : String(reason)})`,
    );
    this.name = 'AfterRecording';
  }
}

export async function recordOutcome(
  deps: { store: InvocationStore; signal: CompletionSignal },
  invocation: Invocation,
  write: FinishWrite,
  afterWrite?: () => Promise<unknown>,
): Promise<WriteOutcome> {
  const written = await deps.store.finish(write);
  if (written !== 'applied') return written;
  const settling = afterWrite?.();
  const signalling =
    write.status !== 'running' ? deps.signal.finished(applyFinish(invocation, write)) : undefined;
  const [settled, signalled] = await Promise.allSettled([settling, signalling]);
  if (settled.status === 'rejected')
    throw new AfterRecording('settling its charge in the cap ledger', settled.reason);
  if (signalled.status === 'rejected') throw new AfterRecording('telling its waiters', signalled.reason);
  return written;
}

/** The invocation's totals once a write's charge is added (as the FINISH statement adds them). */
function applyCharge(invocation: Invocation, write: WriteBody) {
  const usage = write.usage
    ? {
        inputTokens: (invocation.usage?.inputTokens ?? 0) + write.usage.inputTokens,
        outputTokens: (invocation.usage?.outputTokens ?? 0) + write.usage.outputTokens,
      }
    : invocation.usage;
  return {
    usage,
    costMicros: invocation.costMicros + write.costMicros,
    chargedCalls: invocation.chargedCalls + write.chargedCalls,
    providerAttempts: write.providerAttempt ?? invocation.providerAttempts,
  };
}

/** Applies a write to the in-memory invocation, as the row now reads. */
export function applyFinish(invocation: Invocation, write: FinishWrite): Invocation {
  const ended = write.status !== 'running';
  return {
    ...invocation,
    ...applyCharge(invocation, write),
    status: write.status,
    output: write.output,
    error: write.error,
    updatedAt: write.at,
    completedAt: ended ? write.at : null,
  };
}
