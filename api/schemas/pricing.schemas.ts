import { z } from 'zod';
import { isWholeMicros } from '../../domain/pricing/cost';
import { notRoundedToZero, ROUNDS_TO_ZERO } from './common';

const usdPerMtok = z
  .number()
  .min(0)
  .max(100_000)
  .refine(isWholeMicros, 'at most six decimals (prices are kept in micro-dollars per million tokens)')
  .refine(notRoundedToZero, ROUNDS_TO_ZERO)
  .meta({ description: 'US dollars per million tokens.' });

export const PutPriceBody = z
  .object({ input_per_mtok_usd: usdPerMtok, output_per_mtok_usd: usdPerMtok })
  .strict();

export const PriceView = z
  .object({
    model: z.string(),
    input_per_mtok_usd: z.number(),
    output_per_mtok_usd: z.number(),
    source: z.enum(['builtin', 'org']),
  })
  .meta({ id: 'Price' });

export const PriceList = z
  .object({
    data: z.array(PriceView),
    builtin_prices_taken_on: z
      .string()
      .meta({ description: 'When the built-in prices were read off the providers.' }),
  })
  .meta({ id: 'PriceList' });
