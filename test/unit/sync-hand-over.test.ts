import { ProviderError } from '../../domain/providers';
import { RetryLater } from '../../domain/invocations/run-invocation';
import { OrgAtCapacity } from '../../domain/org-at-capacity';
import { handOverOf } from '../../workers/sync-runs';

const owed = () => Promise.resolve(false);
const unavailable = new ProviderError('retryable', 'provider_unavailable', 'the provider answered 503');

describe('handOverOf: how a run in the API goes on in the queue', () => {
  it('an org past its share waits its turn without spending an attempt', () => {
    expect(handOverOf(new OrgAtCapacity(700, owed, 'its share'), 3, 1000)).toEqual({
      delayMs: 700,
      attempts: 3,
      fault: false,
    });
  });

  it("a provider's retryable error spends an attempt and waits its Retry-After", () => {
    expect(handOverOf(new RetryLater(unavailable, 5_000), 3, 1000)).toEqual({
      delayMs: 5_000,
      attempts: 2,
      fault: false,
    });
  });

  it('without a Retry-After, the first backoff: half to all of the base', () => {
    const { delayMs } = handOverOf(new RetryLater(unavailable, null), 3, 1000);
    expect(delayMs).toBeGreaterThanOrEqual(500);
    expect(delayMs).toBeLessThanOrEqual(1000);
  });

  it('a fault spends an attempt, and the last one still leaves one run to the queue', () => {
    expect(handOverOf(new Error('connection lost'), 3, 10)).toMatchObject({ attempts: 2, fault: true });
    expect(handOverOf(new Error('connection lost'), 1, 10)).toMatchObject({ attempts: 1, fault: true });
  });
});
