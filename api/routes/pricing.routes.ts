import { z } from 'zod';
import { PRICES_TAKEN_ON } from '../../domain/pricing/builtin-prices';
import { deletePrice, listPrices, setPrice } from '../../domain/pricing/price-use-cases';
import { callOf } from '../http/call-context';
import { priceDeps } from '../http/deps';
import { defineRoute, needs } from '../http/route';
import { parseInput } from '../http/validate';
import { presentPrice } from '../presenters';
import { modelName } from '../schemas/agents.schemas';
import { PriceList, PriceView, PutPriceBody } from '../schemas/pricing.schemas';

const modelPath = '/v1/pricing/{model}';
/** Model names may hold a slash (`meta-llama/Llama-3-8B`): clients send it encoded as %2F. */
const modelParam = (params: Record<string, string>) =>
  parseInput(z.object({ model: modelName }), { model: params.model ?? '' }, 'path');

export const pricingRoutes = [
  defineRoute({
    method: 'GET',
    path: '/v1/pricing',
    summary: 'Every price the org invokes with: built-in, or its own (source "org"), by model name',
    tag: 'pricing',
    access: needs('stats:read'),
    responses: { 200: { description: 'the price table', schema: PriceList } },
    handle: async (input) => {
      const prices = await listPrices(priceDeps(input.infra), callOf(input));
      return {
        status: 200,
        body: { data: prices.map(presentPrice), builtin_prices_taken_on: PRICES_TAKEN_ON },
      };
    },
  }),
  defineRoute({
    method: 'PUT',
    path: modelPath,
    summary:
      "Set the org's own price for a model (overrides the built-in price, or prices a new model; send a slash in a model name as %2F). An org may have at most 1,000 prices of its own: one more is a 400 validation_error naming `model` (delete one first); changing one it has is always allowed",
    tag: 'pricing',
    access: needs('org:admin'),
    body: PutPriceBody,
    responses: { 200: { description: 'the price now in force', schema: PriceView } },
    handle: async (input) => {
      const { model } = modelParam(input.params);
      const price = await setPrice(priceDeps(input.infra), callOf(input), model, {
        input: input.body.input_per_mtok_usd,
        output: input.body.output_per_mtok_usd,
      });
      return { status: 200, body: presentPrice(price) };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: modelPath,
    summary: "Drop the org's own price; the built-in price, if any, applies again",
    tag: 'pricing',
    access: needs('org:admin'),
    responses: {
      204: {
        description: 'the org has no price of its own for the model (also when it had none: idempotent)',
      },
    },
    handle: async (input) => {
      const { model } = modelParam(input.params);
      await deletePrice(priceDeps(input.infra), callOf(input), model);
      return { status: 204 };
    },
  }),
];
