import fc from 'fast-check';
import type { ChatMessage } from '../../domain/providers';
import { BUILTIN_PRICES, PRICES_TAKEN_ON } from '../../domain/pricing/builtin-prices';
import {
  costMicros,
  inputTokenBound,
  isWholeMicros,
  usdToMicros,
  worstCaseMicros,
  type Price,
} from '../../domain/pricing/cost';

const role = fc.constantFrom<ChatMessage['role']>('system', 'user', 'assistant', 'tool');
const message = fc.record({ role, content: fc.string({ unit: 'grapheme', maxLength: 400 }) });
const messages = fc.array(message, { minLength: 1, maxLength: 20 });
// Up to 100,000 USD per million tokens, in whole micro-dollars (the API refuses finer prices).
const micros = fc.integer({ min: 0, max: 100_000 * 1_000_000 });
const price = fc.record({
  model: fc.constant('m'),
  inputMicrosPerMtok: micros,
  outputMicrosPerMtok: micros,
  source: fc.constant<'org'>('org'),
});
const maxTokens = fc.integer({ min: 1, max: 1_000_000 });

/** The exact cost as a rational number of micro-dollars: numerator over 1e6. */
const exactNumerator = (input: number, output: number, p: Price) =>
  BigInt(input) * BigInt(p.inputMicrosPerMtok) + BigInt(output) * BigInt(p.outputMicrosPerMtok);

describe('pricing', () => {
  it('never reserves less than the real cost of any usage within the request bounds', () => {
    fc.assert(
      fc.property(
        messages,
        maxTokens,
        price,
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (msgs, max, p, fi, fo) => {
          const bound = inputTokenBound(msgs);
          const usage = { inputTokens: Math.floor(bound * fi), outputTokens: Math.floor(max * fo) };
          expect(costMicros(usage, p)).toBeLessThanOrEqual(worstCaseMicros(msgs, max, p));
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('reserves exactly the cost of the worst case (the input bound and max_tokens)', () => {
    fc.assert(
      fc.property(messages, maxTokens, price, (msgs, max, p) => {
        expect(worstCaseMicros(msgs, max, p)).toBe(
          costMicros({ inputTokens: inputTokenBound(msgs), outputTokens: max }, p),
        );
      }),
    );
  });

  it('rounds up: never below the exact cost, never a whole micro-dollar above it', () => {
    fc.assert(
      fc.property(fc.nat(10_000_000), fc.nat(10_000_000), price, (input, output, p) => {
        const charged = BigInt(costMicros({ inputTokens: input, outputTokens: output }, p)) * 1_000_000n;
        const exact = exactNumerator(input, output, p);
        expect(charged >= exact).toBe(true);
        expect(charged - exact < 1_000_000n).toBe(true);
      }),
      { numRuns: 2_000 },
    );
  });

  it('is exact where float arithmetic is not (products beyond 2^53)', () => {
    const p: Price = {
      model: 'm',
      inputMicrosPerMtok: 99_999_999_999,
      outputMicrosPerMtok: 1,
      source: 'org',
    };
    // 9,999,999 tokens at 99,999.999999 USD/Mtok: the product (about 1e18) is far beyond 2^53.
    const exact = 9_999_999n * 99_999_999_999n;
    expect(costMicros({ inputTokens: 9_999_999, outputTokens: 0 }, p)).toBe(
      Number((exact + 999_999n) / 1_000_000n),
    );
  });

  it('bounds input tokens by UTF-8 bytes plus per-message and per-request overhead', () => {
    expect(inputTokenBound([{ role: 'user', content: '' }])).toBe(64 + 4 + 8);
    expect(inputTokenBound([{ role: 'user', content: 'héllo' }])).toBe(64 + 4 + 6 + 8);
    fc.assert(
      fc.property(messages, (msgs) => {
        // Every character is at least one byte: the bound is never below a character count.
        const chars = msgs.reduce((n, m) => n + [...m.content].length, 0);
        expect(inputTokenBound(msgs)).toBeGreaterThanOrEqual(chars + 8 * msgs.length + 64);
      }),
    );
  });

  it('converts USD prices to whole micro-dollars without float drift', () => {
    expect(usdToMicros(0.15)).toBe(150_000);
    expect(usdToMicros(2.5)).toBe(2_500_000);
    expect(usdToMicros(0.000001)).toBe(1);
    expect(isWholeMicros(0.15)).toBe(true);
    expect(isWholeMicros(1.1)).toBe(true);
    expect(isWholeMicros(0.0000001)).toBe(false);
    fc.assert(
      fc.property(micros, (m) => {
        expect(isWholeMicros(m / 1e6)).toBe(true);
        expect(usdToMicros(m / 1e6)).toBe(m);
      }),
    );
  });

  it('has a built-in table with its date, covering OpenAI and Anthropic', () => {
    expect(PRICES_TAKEN_ON).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    const providers = new Set(Object.values(BUILTIN_PRICES).map((p) => p.provider));
    expect(providers).toEqual(new Set(['openai', 'anthropic']));
    for (const [model, p] of Object.entries(BUILTIN_PRICES)) {
      expect({ model, input: isWholeMicros(p.input), output: isWholeMicros(p.output) }).toEqual({
        model,
        input: true,
        output: true,
      });
      expect(p.output).toBeGreaterThanOrEqual(p.input);
    }
  });
});
