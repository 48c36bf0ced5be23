import { reestimateWith } from '../../domain/policy/cost-basis';
import type { Action } from '../../domain/policy/policy';

/** The price of a modified action: what the modification changed, and the original's for the rest. */
const price = { inputMicrosPerMtok: 10_000_000, outputMicrosPerMtok: 10_000_000 };
const tool = (description: string) => ({ type: 'function', function: { name: 'lookup', description } });
const original: Action = {
  type: 'llm.invoke',
  messages: [{ role: 'user', content: 'hello' }],
  maxTokens: 100,
  offeredTools: [tool('short')],
};

it('prices the offered tools a redaction rewrote, not the ones sent', () => {
  const reestimate = reestimateWith({ price, tools: original.offeredTools }, original);
  const unchanged = reestimate({ ...original });
  const grown = reestimate({ ...original, offeredTools: [tool('Z'.repeat(10_000))] });
  // 10,000 more bytes of input at $10 per million tokens, a token per byte at worst: $0.1 more.
  expect(grown - unchanged).toBeCloseTo(0.1, 2);
});

it('prices the tools of the cost basis when the modification left them alone', () => {
  const withTools = reestimateWith({ price, tools: [tool('Z'.repeat(10_000))] }, original);
  const without = reestimateWith({ price }, original);
  const { offeredTools: _kept, ...untouched } = original;
  expect(withTools(untouched) - without(untouched)).toBeCloseTo(0.1, 2);
});
