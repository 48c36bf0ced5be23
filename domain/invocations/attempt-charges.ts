import { chargeFor, NOTHING, type CapAmounts } from '../budget/charges';
import type { Delivery, ProviderError } from '../providers';
import type { Invocation } from './invocation';

/** What one provider attempt is charged: its share of the session's caps and the usage recorded. */
export interface AttemptCharge {
  amounts: CapAmounts;
  usage: { inputTokens: number; outputTokens: number } | null;
  /**
   * What the provider reported, when it was more than the request's bounds allow and `usage` is
   * the bound instead: kept in the audit entry, so that its invoice can be reconciled.
   */
  reported?: { inputTokens: number; outputTokens: number };
}

export const NO_CHARGE: AttemptCharge = { amounts: NOTHING, usage: null };

/** The worst case the attempt reserved: what a call whose outcome is unknown is charged. */
export function reservationCharge(invocation: Invocation): AttemptCharge {
  const { costMicros, tokens } = invocation.reservation;
  const outputTokens = Math.min(invocation.request.maxTokens, tokens);
  return {
    amounts: { costMicros, calls: 1, tokens },
    usage: { inputTokens: tokens - outputTokens, outputTokens },
  };
}

type Streamed = NonNullable<ProviderError['streamed']>;

/** Whether part of a broken stream's answer (text or a tool call) arrived, and so went on to its client. */
export const answerArrived = (streamed: ProviderError['streamed']): boolean =>
  streamed !== null && (streamed.content !== '' || streamed.toolCallText !== '');

/**
 * Whether a broken stream had begun to arrive: part of its answer, or the provider's usage. Before
 * that, nothing tells what the provider used (it may have written an answer that never came).
 */
const piecesArrived = (streamed: ProviderError['streamed']): streamed is Streamed =>
  streamed !== null && (answerArrived(streamed) || streamed.usage !== null);

/**
 * A failed attempt's charge. Every request the provider received counts as a call; one it answered
 * with an error status costs nothing (providers do not bill those); one whose outcome is unknown
 * (sent, then a timeout or a lost connection) is charged at the reservation, since the provider
 * may bill it; one never sent is free.
 */
export function failedAttemptCharge(
  invocation: Invocation,
  err: Pick<ProviderError, 'delivery' | 'streamed'>,
): AttemptCharge {
  const delivery: Delivery = err.delivery;
  if (delivery === 'not_sent') return NO_CHARGE;
  if (piecesArrived(err.streamed)) return streamedCharge(invocation, err.streamed);
  if (delivery === 'unknown') return reservationCharge(invocation);
  return { amounts: { ...NOTHING, calls: 1 }, usage: null };
}

/**
 * A stream that broke or was cut off (its client hung up) after pieces arrived (before any did, it
 * is charged as any call whose outcome is unknown, at the reservation): the usage the
 * provider reported, else an upper bound of what it used: the whole prompt, and one token per
 * byte the model wrote that arrived, text and tool calls alike (a token is at least one byte).
 * Never above the reservation.
 */
export function streamedCharge(invocation: Invocation, streamed: Streamed): AttemptCharge {
  const { request, price } = invocation;
  const reported = streamed.usage;
  const usage = reported ?? {
    inputTokens: Number.MAX_SAFE_INTEGER,
    outputTokens:
      Buffer.byteLength(streamed.content, 'utf8') + Buffer.byteLength(streamed.toolCallText, 'utf8'),
  };
  const charged = chargeFor(usage, request.messages, request.maxTokens, price, request.tools);
  const { inputTokens, outputTokens } = charged;
  return {
    amounts: { costMicros: charged.costMicros, calls: 1, tokens: inputTokens + outputTokens },
    usage: { inputTokens, outputTokens },
    ...(reported && charged.capped ? { reported } : {}),
  };
}
