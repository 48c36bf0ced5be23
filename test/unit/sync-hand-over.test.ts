import type Redis from 'ioredis';
import { ProviderError } from '../../domain/providers';
import { RunClaims } from '../../infra/queue/run-claims';
import { RetryLater } from '../../domain/invocations/run-invocation';
import { OrgAtCapacity } from '../../domain/org-at-capacity';
import { invokeBackoff, jobInfoOf } from '../../workers/start-workers';
import { handOverOf } from '../../workers/sync-runs';

const owed = () => Promise.resolve(false);
const unavailable = new ProviderError('retryable', 'provider_unavailable', 'the provider answered 503');

describe('handOverOf: how a run in the API goes on in the queue', () => {
  it('an org past its share waits its turn without spending an attempt', () => {
    expect(handOverOf(new OrgAtCapacity(700, owed, 'its share'), 3, 1000)).toEqual({
      delayMs: 700,
      attemptsMade: 0,
      attemptsLeft: 3,
      fault: false,
    });
  });

  it("a provider's retryable error spends an attempt and waits its Retry-After", () => {
    expect(handOverOf(new RetryLater(unavailable, 5_000), 3, 1000)).toEqual({
      delayMs: 5_000,
      attemptsMade: 1,
      attemptsLeft: 2,
      fault: false,
    });
  });

  it('without a Retry-After, the first backoff: half to all of the base', () => {
    const { delayMs } = handOverOf(new RetryLater(unavailable, null), 3, 1000);
    expect(delayMs).toBeGreaterThanOrEqual(500);
    expect(delayMs).toBeLessThanOrEqual(1000);
  });

  it('a fault spends an attempt, and the last one still leaves one run to the queue', () => {
    expect(handOverOf(new Error('connection lost'), 3, 10)).toMatchObject({ attemptsLeft: 2, fault: true });
    expect(handOverOf(new Error('connection lost'), 1, 10)).toMatchObject({ attemptsLeft: 1, fault: true });
  });
});

describe('a job handed over by an API process counts on from its attempts (QA)', () => {
  const handedOver = {
    id: 'inv_1-submit',
    attemptsMade: 0,
    attemptsStarted: 1,
    opts: { attempts: 2, backoff: { type: 'provider', delay: 1000 } },
    timestamp: 1,
    data: { invocation_id: 'inv_1', org_id: 'org_1', trace: {}, attempts_made: 1 },
  };

  it("its first run is the invocation's second attempt of three", () => {
    expect(jobInfoOf(handedOver)).toMatchObject({ attemptsMade: 1, attempts: 3, deferrals: 0 });
    const queued = { ...handedOver, data: { invocation_id: 'inv_1', org_id: 'org_1', trace: {} } };
    expect(jobInfoOf(queued)).toMatchObject({ attemptsMade: 0, attempts: 2 });
  });

  it('its first retry waits the second backoff: the base doubled, jittered to 50–100%', () => {
    for (let i = 0; i < 20; i++) {
      const delay = invokeBackoff(1, handedOver);
      expect(delay).toBeGreaterThanOrEqual(1000);
      expect(delay).toBeLessThanOrEqual(2000);
    }
  });
});

describe('the leases of runs in the API', () => {
  const timing = (reapAfterMs: number, jobLockMs: number) => {
    const claims = new RunClaims({} as Redis, 'cp', { reapAfterMs, jobLockMs });
    return { renewEveryMs: claims.renewEveryMs, leaseMs: claims.leaseMs };
  };

  it('last at least a worker’s hold on its job, so a Redis outage BullMQ lives through they do too (QA)', () => {
    expect(timing(60_000, 30_000)).toEqual({ renewEveryMs: 5_000, leaseMs: 30_000 });
    expect(timing(4_000, 1_000)).toEqual({ renewEveryMs: 1_000, leaseMs: 3_000 });
    expect(timing(1_000, 500)).toEqual({ renewEveryMs: 250, leaseMs: 750 });
  });
});
