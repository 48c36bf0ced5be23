import { worstCase } from '../budget/charges';
import { microsToUsd, type Rates } from '../pricing/cost';
import type { Action } from './policy';

/**
 * What an invoke's action is priced with when a policy modifies it: the rates it was admitted at
 * and the tools it offers. Data, not a function, so an evaluation can take it to another thread.
 */
export interface CostBasis {
  price: Rates;
  tools?: readonly unknown[];
}

/**
 * The worst case in USD of an action a policy modified, as the guardian reserves for it: what the
 * modification left unchanged (messages, max_tokens, the offered tools) is the original action's.
 */
export const reestimateWith =
  (basis: CostBasis, original: Action) =>
  (modified: Action): number =>
    microsToUsd(
      worstCase(
        modified.messages ?? original.messages ?? [],
        modified.maxTokens ?? original.maxTokens ?? 0,
        basis.price,
        modified.offeredTools ?? basis.tools,
      ).costMicros,
    );
