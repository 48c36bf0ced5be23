import fc from 'fast-check';
import { chargeFor, worstCase } from '../../domain/budget/charges';
import { costMicros, inputTokenBound } from '../../domain/pricing/cost';
import type { ChatMessage } from '../../domain/providers';

const price = { inputMicrosPerMtok: 3_000_000, outputMicrosPerMtok: 15_000_000 }; // 3 and 15 USD per Mtok
const messages: ChatMessage[] = [{ role: 'user', content: 'hello' }];

describe('the worst case reserved', () => {
  it('is the input bound and all of max_tokens, at the price, as one call', () => {
    const bound = inputTokenBound(messages); // 5 + 4 + 8 + 64
    expect(worstCase(messages, 100, price)).toEqual({
      costMicros: bound * 3 + 100 * 15,
      calls: 1,
      tokens: bound + 100,
    });
  });
});

describe('the charge of a completed call', () => {
  it('is the reported usage at the price, rounded up to a micro-dollar', () => {
    const charge = chargeFor({ inputTokens: 7, outputTokens: 3 }, messages, 100, {
      inputMicrosPerMtok: 150_000,
      outputMicrosPerMtok: 600_000,
    });
    // 7 x 0.15 + 3 x 0.6 = 2.85 micro-dollars -> 3
    expect(charge).toEqual({ inputTokens: 7, outputTokens: 3, costMicros: 3, capped: false });
  });

  it('caps a provider that reports more than the request allows, and says so', () => {
    const charge = chargeFor({ inputTokens: 1_000_000, outputTokens: 500 }, messages, 100, price);
    expect(charge.inputTokens).toBe(inputTokenBound(messages));
    expect(charge.outputTokens).toBe(100);
    expect(charge.capped).toBe(true);
  });

  it('never exceeds the reservation, whatever the provider reports (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ role: fc.constant('user' as const), content: fc.string({ maxLength: 200 }) }), {
          minLength: 1,
          maxLength: 5,
        }),
        fc.integer({ min: 1, max: 10_000 }),
        fc.nat(10_000_000),
        fc.nat(10_000_000),
        fc.nat(100_000_000),
        fc.nat(100_000_000),
        (msgs, maxTokens, input, output, inPrice, outPrice) => {
          const rates = { inputMicrosPerMtok: inPrice, outputMicrosPerMtok: outPrice };
          const charge = chargeFor({ inputTokens: input, outputTokens: output }, msgs, maxTokens, rates);
          const reserved = worstCase(msgs, maxTokens, rates);
          expect(charge.costMicros).toBeLessThanOrEqual(reserved.costMicros);
          expect(charge.inputTokens + charge.outputTokens).toBeLessThanOrEqual(reserved.tokens);
          expect(charge.costMicros).toBe(costMicros(charge, rates));
        },
      ),
      { numRuns: 1000 },
    );
  });
});
