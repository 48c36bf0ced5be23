import { RetryLater } from '../../domain/invocations/run-invocation';
import { ProviderError } from '../../domain/providers';
import { providerBackoff } from '../../workers/start-workers';

const job = { opts: { backoff: { type: 'provider', delay: 1000 } } };
const rateLimited = (retryAfterMs: number | null) =>
  new RetryLater(new ProviderError('retryable', 'provider_rate_limited', 'slow down', 429), retryAfterMs);

describe('provider retry backoff', () => {
  it("waits what the provider's Retry-After asks, within [base, 60 s]", () => {
    expect(providerBackoff(1, job, rateLimited(5000))).toBe(5000);
    expect(providerBackoff(1, job, rateLimited(0))).toBe(1000);
    expect(providerBackoff(1, job, rateLimited(3_600_000))).toBe(60_000);
  });

  it('otherwise doubles from the base each attempt, with jitter of at most half', () => {
    for (let i = 0; i < 50; i++) {
      const first = providerBackoff(1, job, rateLimited(null));
      const third = providerBackoff(3, job, new Error('network'));
      expect(first).toBeGreaterThanOrEqual(500);
      expect(first).toBeLessThanOrEqual(1000);
      expect(third).toBeGreaterThanOrEqual(2000);
      expect(third).toBeLessThanOrEqual(4000);
    }
  });
});
