import { newAuditEvent } from '../audit/new-event';
import type { Clock } from '../clock';
import { DomainError, invalidField } from '../errors';
import type { ModelPrice } from '../model';
import type { Tx, UnitOfWork } from '../ports';
import { actorOf, type CallContext } from '../principal';
import { BUILTIN_PRICES } from './builtin-prices';
import { usdToMicros, type Price } from './cost';

export interface PriceDeps {
  uow: UnitOfWork;
  clock: Clock;
}

const builtin = (model: string): Price | null => {
  const p = Object.hasOwn(BUILTIN_PRICES, model) ? BUILTIN_PRICES[model] : undefined;
  return p
    ? {
        model,
        inputMicrosPerMtok: usdToMicros(p.input),
        outputMicrosPerMtok: usdToMicros(p.output),
        source: 'builtin',
      }
    : null;
};

const fromOrg = (p: ModelPrice): Price => ({
  model: p.model,
  inputMicrosPerMtok: p.inputMicrosPerMtok,
  outputMicrosPerMtok: p.outputMicrosPerMtok,
  source: 'org',
});

/** The org's own price (if it has one for the model), else the built-in one, else none. */
export const effectivePrice = (model: string, own: ModelPrice | null): Price | null =>
  own ? fromOrg(own) : builtin(model);

/** Fail closed: a cap cannot hold on a cost that cannot be computed. */
export const unpricedModel = (model: string): DomainError =>
  new DomainError(
    'unpriced_model',
    `model ${model} has no price: set one with PUT /v1/pricing/{model} before invoking it`,
    { model },
  );

/** The org's own price, else the built-in one; a model with neither cannot be invoked. */
export async function resolvePrice(tx: Tx, orgId: string, model: string): Promise<Price> {
  const price = effectivePrice(model, await tx.prices.get(orgId, model));
  if (!price) throw unpricedModel(model);
  return price;
}

/** Every price the org sees: built-in entries, with its own overrides and additions in their place. */
export async function listPrices(deps: PriceDeps, ctx: CallContext): Promise<Price[]> {
  const own = await deps.uow.read((tx) => tx.prices.list(ctx.principal.orgId));
  const merged = new Map<string, Price>();
  for (const model of Object.keys(BUILTIN_PRICES)) merged.set(model, builtin(model) as Price);
  for (const p of own) merged.set(p.model, fromOrg(p));
  return [...merged.values()].sort((a, b) => (a.model < b.model ? -1 : a.model > b.model ? 1 : 0));
}

const recordPriceEvent = (
  tx: Tx,
  ctx: CallContext,
  at: Date,
  action: string,
  model: string,
  details: object,
) =>
  tx.audit.record(
    newAuditEvent({
      orgId: ctx.principal.orgId,
      actor: actorOf(ctx.principal),
      action,
      resource: { type: 'model_price', id: model },
      at,
      requestId: ctx.requestId,
      details: { model, ...details },
    }),
  );

const usdPair = (p: Price | null) =>
  p
    ? { input_per_mtok_usd: p.inputMicrosPerMtok / 1e6, output_per_mtok_usd: p.outputMicrosPerMtok / 1e6 }
    : null;

/**
 * Prices an org may set of its own: its price list is one unpaginated answer (and the models
 * list is made from it), so each addition cannot be allowed to grow it.
 */
export const MAX_PRICES_PER_ORG = 1_000;

export async function setPrice(
  deps: PriceDeps,
  ctx: CallContext,
  model: string,
  usd: { input: number; output: number },
): Promise<Price> {
  const now = deps.clock.now();
  const row: ModelPrice = {
    orgId: ctx.principal.orgId,
    model,
    inputMicrosPerMtok: usdToMicros(usd.input),
    outputMicrosPerMtok: usdToMicros(usd.output),
    updatedAt: now,
    updatedBy: ctx.principal.id,
  };
  return deps.uow.transaction(async (tx) => {
    // Copied before the write: the repository may update the loaded row in place.
    const before = await tx.prices.get(row.orgId, model);
    if (!before && (await tx.prices.countLocked(row.orgId)) >= MAX_PRICES_PER_ORG)
      throw invalidField(
        'model',
        `the org already has ${MAX_PRICES_PER_ORG} prices of its own, the most it may have: delete one first`,
      );
    const previous = usdPair(before ? fromOrg(before) : builtin(model));
    await tx.prices.put(row);
    const price = fromOrg(row);
    recordPriceEvent(tx, ctx, now, 'pricing.set', model, { ...usdPair(price), previous });
    return price;
  });
}

/**
 * Drops the org's own price; the built-in one (if any) applies again. Idempotent, as the contract
 * answers 204 alone: with no price of the org's own there is nothing to drop, and nothing audited.
 */
export async function deletePrice(deps: PriceDeps, ctx: CallContext, model: string): Promise<void> {
  const now = deps.clock.now();
  await deps.uow.transaction(async (tx) => {
    const before = await tx.prices.get(ctx.principal.orgId, model);
    if (!before || !(await tx.prices.delete(ctx.principal.orgId, model))) return;
    recordPriceEvent(tx, ctx, now, 'pricing.deleted', model, {
      previous: usdPair(fromOrg(before)),
      now: usdPair(builtin(model)),
    });
  });
}
