import type { ChatMessage } from '../providers';

/**
 * Money inside the service is integer micro-dollars (1 USD = 1,000,000). Prices are integer
 * micro-dollars per million tokens, so a price with up to six decimals in USD is exact.
 * Products are computed in BigInt: tokens (up to ~1e7) times a price (up to ~1e10) exceed 2^53.
 */
export const MICROS_PER_USD = 1_000_000;
const MICROS = BigInt(MICROS_PER_USD);

export interface Price {
  model: string;
  inputMicrosPerMtok: number;
  outputMicrosPerMtok: number;
  source: 'builtin' | 'org';
}

/** The two rates a cost is computed from. */
export type Rates = Pick<Price, 'inputMicrosPerMtok' | 'outputMicrosPerMtok'>;

export interface TokenCounts {
  inputTokens: number;
  outputTokens: number;
}

/** USD (at most six decimals) to micro-dollars; the float error of e.g. 0.15 * 1e6 is rounded away. */
export const usdToMicros = (usd: number): number => Math.round(usd * MICROS_PER_USD);

export const microsToUsd = (micros: number): number => micros / MICROS_PER_USD;

/** True when `usd` has no more than six decimals, i.e. converts to micro-dollars exactly. */
export const isWholeMicros = (usd: number): boolean =>
  Math.abs(usd * MICROS_PER_USD - Math.round(usd * MICROS_PER_USD)) < 1e-6 * Math.max(1, Math.abs(usd));

/**
 * The cost of a call in micro-dollars, rounded up: the service never charges less than the exact
 * price, and never more than one micro-dollar above it.
 */
export function costMicros(tokens: TokenCounts, price: Rates): number {
  const exact =
    BigInt(tokens.inputTokens) * BigInt(price.inputMicrosPerMtok) +
    BigInt(tokens.outputTokens) * BigInt(price.outputMicrosPerMtok);
  return Number((exact + MICROS - 1n) / MICROS);
}

/** Chat formatting tokens a provider may add per message (role markers, separators). */
export const PER_MESSAGE_OVERHEAD = 8;
/** Tokens a provider may add once per request (reply priming, a chat template's preamble). */
export const PER_REQUEST_OVERHEAD = 64;

/**
 * An upper bound on the input tokens any provider will count for these messages, without a
 * tokenizer. Why it holds: the tokenizers of OpenAI (tiktoken cl100k/o200k) and Anthropic, and
 * the open models served behind openai_compatible endpoints, are byte-level BPE, where every
 * text token stands for at least one UTF-8 byte, so text never counts more tokens than bytes.
 * On top of the text, chat formatting adds special tokens: OpenAI documents 3 per message plus 3
 * to prime the reply; Llama-3-style templates add about 5 per message plus a header, and up to
 * ~30 for a default system preamble. 8 per message and 64 per request cover those with margin.
 * The bound is loose (real text averages about 4 bytes a token), which only means a larger
 * reservation, returned at settlement.
 */
export function inputTokenBound(messages: readonly ChatMessage[], tools: readonly unknown[] = []): number {
  let bound = PER_REQUEST_OVERHEAD;
  for (const m of messages) bound += messageBytes(m) + PER_MESSAGE_OVERHEAD;
  // Tool definitions are sent as text too (a provider renders them into the prompt).
  if (tools.length > 0) bound += Buffer.byteLength(JSON.stringify(tools), 'utf8') + PER_MESSAGE_OVERHEAD;
  return bound;
}

/** Every byte a message puts in the prompt: role, text, and the tool calls it carries or answers. */
function messageBytes(m: ChatMessage): number {
  let bytes = Buffer.byteLength(m.role, 'utf8') + Buffer.byteLength(m.content, 'utf8');
  if (m.toolCallId) bytes += Buffer.byteLength(m.toolCallId, 'utf8');
  for (const call of m.toolCalls ?? [])
    bytes +=
      Buffer.byteLength(call.id, 'utf8') +
      Buffer.byteLength(call.function.name, 'utf8') +
      Buffer.byteLength(call.function.arguments, 'utf8') +
      PER_MESSAGE_OVERHEAD;
  return bytes;
}

/**
 * What to reserve before the call: the input bound and the whole output limit at their prices.
 * Any usage within the request's bounds costs no more than this (costMicros is monotonic).
 */
export const worstCaseMicros = (messages: readonly ChatMessage[], maxTokens: number, price: Rates): number =>
  costMicros({ inputTokens: inputTokenBound(messages), outputTokens: maxTokens }, price);
