import type { ChatMessage } from '../providers';
import { costMicros, inputTokenBound, type Rates } from '../pricing/cost';

/** What an invocation holds against, or is charged to, a session's three caps. */
export interface CapAmounts {
  costMicros: number;
  calls: number;
  tokens: number;
}

export const NOTHING: CapAmounts = { costMicros: 0, calls: 0, tokens: 0 };

/**
 * The worst case reserved before the provider is called: the input bound and the whole output
 * limit, at the admitted price, as one call. Any answer within the request's bounds costs no more.
 */
export function worstCase(
  messages: readonly ChatMessage[],
  maxTokens: number,
  price: Rates,
  tools?: readonly unknown[],
): CapAmounts {
  const inputTokens = inputTokenBound(messages, tools);
  return {
    costMicros: costMicros({ inputTokens, outputTokens: maxTokens }, price),
    calls: 1,
    tokens: inputTokens + maxTokens,
  };
}

export interface Charge {
  inputTokens: number;
  outputTokens: number;
  costMicros: number;
  /** True when the provider reported more than the request's bounds allow (it was capped). */
  capped: boolean;
}

/**
 * What a completed call is charged: the reported usage, capped at the request's bounds, so the
 * charge never exceeds the reservation (a provider cannot count more input tokens than bytes, nor
 * more output tokens than max_tokens; one that says so is capped and logged, never believed).
 */
export function chargeFor(
  usage: { inputTokens: number; outputTokens: number },
  messages: readonly ChatMessage[],
  maxTokens: number,
  price: Rates,
  tools?: readonly unknown[],
): Charge {
  const inputTokens = Math.min(usage.inputTokens, inputTokenBound(messages, tools));
  const outputTokens = Math.min(usage.outputTokens, maxTokens);
  return {
    inputTokens,
    outputTokens,
    costMicros: costMicros({ inputTokens, outputTokens }, price),
    capped: inputTokens !== usage.inputTokens || outputTokens !== usage.outputTokens,
  };
}
