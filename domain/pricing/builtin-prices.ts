/**
 * The built-in price table: USD per million tokens, standard (non-batch, non-cached) rates from
 * the providers' public price pages (openai.com/api/pricing, anthropic.com/pricing) as of
 * PRICES_TAKEN_ON. Prices change: an org overrides any entry with `PUT /v1/pricing/{model}`,
 * and a model missing here is refused (`unpriced_model`) until someone prices it.
 * Dated snapshot ids are listed explicitly where their price is known to equal the alias's;
 * older snapshots with other prices (e.g. gpt-4o-2024-05-13) are deliberately absent.
 */
export const PRICES_TAKEN_ON = '2025-11-24';

export interface BuiltinPrice {
  provider: 'openai' | 'anthropic';
  input: number;
  output: number;
}

export const BUILTIN_PRICES: Readonly<Record<string, BuiltinPrice>> = {
  // OpenAI
  'gpt-5': { provider: 'openai', input: 1.25, output: 10 },
  'gpt-5-2025-08-07': { provider: 'openai', input: 1.25, output: 10 },
  'gpt-5-mini': { provider: 'openai', input: 0.25, output: 2 },
  'gpt-5-mini-2025-08-07': { provider: 'openai', input: 0.25, output: 2 },
  'gpt-5-nano': { provider: 'openai', input: 0.05, output: 0.4 },
  'gpt-5-nano-2025-08-07': { provider: 'openai', input: 0.05, output: 0.4 },
  'gpt-4.1': { provider: 'openai', input: 2, output: 8 },
  'gpt-4.1-2025-04-14': { provider: 'openai', input: 2, output: 8 },
  'gpt-4.1-mini': { provider: 'openai', input: 0.4, output: 1.6 },
  'gpt-4.1-mini-2025-04-14': { provider: 'openai', input: 0.4, output: 1.6 },
  'gpt-4.1-nano': { provider: 'openai', input: 0.1, output: 0.4 },
  'gpt-4.1-nano-2025-04-14': { provider: 'openai', input: 0.1, output: 0.4 },
  'gpt-4o': { provider: 'openai', input: 2.5, output: 10 },
  'gpt-4o-2024-08-06': { provider: 'openai', input: 2.5, output: 10 },
  'gpt-4o-2024-11-20': { provider: 'openai', input: 2.5, output: 10 },
  'gpt-4o-mini': { provider: 'openai', input: 0.15, output: 0.6 },
  'gpt-4o-mini-2024-07-18': { provider: 'openai', input: 0.15, output: 0.6 },
  o3: { provider: 'openai', input: 2, output: 8 },
  'o3-2025-04-16': { provider: 'openai', input: 2, output: 8 },
  'o3-mini': { provider: 'openai', input: 1.1, output: 4.4 },
  'o4-mini': { provider: 'openai', input: 1.1, output: 4.4 },
  'o4-mini-2025-04-16': { provider: 'openai', input: 1.1, output: 4.4 },
  o1: { provider: 'openai', input: 15, output: 60 },
  'gpt-4-turbo': { provider: 'openai', input: 10, output: 30 },
  'gpt-3.5-turbo': { provider: 'openai', input: 0.5, output: 1.5 },
  // Anthropic
  'claude-opus-4-5': { provider: 'anthropic', input: 5, output: 25 },
  'claude-opus-4-5-20251101': { provider: 'anthropic', input: 5, output: 25 },
  'claude-opus-4-1': { provider: 'anthropic', input: 15, output: 75 },
  'claude-opus-4-1-20250805': { provider: 'anthropic', input: 15, output: 75 },
  'claude-opus-4-0': { provider: 'anthropic', input: 15, output: 75 },
  'claude-opus-4-20250514': { provider: 'anthropic', input: 15, output: 75 },
  'claude-sonnet-4-5': { provider: 'anthropic', input: 3, output: 15 },
  'claude-sonnet-4-5-20250929': { provider: 'anthropic', input: 3, output: 15 },
  'claude-sonnet-4-0': { provider: 'anthropic', input: 3, output: 15 },
  'claude-sonnet-4-20250514': { provider: 'anthropic', input: 3, output: 15 },
  'claude-3-7-sonnet-latest': { provider: 'anthropic', input: 3, output: 15 },
  'claude-3-7-sonnet-20250219': { provider: 'anthropic', input: 3, output: 15 },
  'claude-haiku-4-5': { provider: 'anthropic', input: 1, output: 5 },
  'claude-haiku-4-5-20251001': { provider: 'anthropic', input: 1, output: 5 },
  'claude-3-5-haiku-latest': { provider: 'anthropic', input: 0.8, output: 4 },
  'claude-3-5-haiku-20241022': { provider: 'anthropic', input: 0.8, output: 4 },
  'claude-3-haiku-20240307': { provider: 'anthropic', input: 0.25, output: 1.25 },
};
