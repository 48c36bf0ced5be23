import { crossedBySettling } from '../../domain/budget/cap-refusal';
import type { CapSnapshot } from '../../domain/budget/cap-ledger';

/** Which cap a charge the database refused crossed, from the session's settled usage. */
const snapshot = (limits: CapSnapshot['limits'], spent: CapSnapshot['spent']): CapSnapshot => ({
  sessionId: 'ses_1',
  limits,
  spent,
  expiresAt: new Date('2026-11-29T13:00:00Z'),
  // Calls in flight hold reservations, not settled usage: the constraint does not count them.
  inFlight: [{ invocationId: 'inv_2:1', amounts: { costMicros: 900, calls: 1, tokens: 90 } }],
});

it('names the cost cap with its limit, what settled usage leaves, and the charge', () => {
  const s = snapshot(
    { costMicros: 1_000, calls: null, tokens: null },
    { costMicros: 400, calls: 3, tokens: 30 },
  );
  expect(crossedBySettling(s, { costMicros: 700, calls: 1, tokens: 10 })).toEqual({
    cap: 'cost',
    limit: 1_000,
    remaining: 600,
    needed: 700,
  });
});

it('names the calls or tokens cap when the cost fits', () => {
  const calls = snapshot(
    { costMicros: 1_000, calls: 3, tokens: null },
    { costMicros: 0, calls: 3, tokens: 0 },
  );
  expect(crossedBySettling(calls, { costMicros: 1, calls: 1, tokens: 1 })).toMatchObject({
    cap: 'calls',
    remaining: 0,
  });
  const tokens = snapshot(
    { costMicros: 1_000, calls: null, tokens: 50 },
    { costMicros: 0, calls: 0, tokens: 45 },
  );
  expect(crossedBySettling(tokens, { costMicros: 1, calls: 1, tokens: 6 })).toMatchObject({
    cap: 'tokens',
    remaining: 5,
    needed: 6,
  });
});

it('names none when the charge fits every cap (the caps changed since the refusal)', () => {
  const s = snapshot({ costMicros: 1_000, calls: 5, tokens: 50 }, { costMicros: 0, calls: 0, tokens: 0 });
  expect(crossedBySettling(s, { costMicros: 1_000, calls: 1, tokens: 50 })).toBeNull();
});
