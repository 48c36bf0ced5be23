import { DomainError } from '../../domain/errors';
import { NOTHING, type CapAmounts } from '../../domain/budget/charges';
import { assertFits, assertOpen, statusAt, type Session } from '../../domain/sessions/session';

const now = new Date('2026-11-22T12:00:00Z');
const session = (over: Partial<Session> = {}): Session => ({
  id: 'ses_1',
  orgId: 'org_1',
  agentId: null,
  status: 'open',
  limits: { maxCostMicros: 1_000_000, maxCalls: 10, maxTokens: 1000 },
  usage: { costMicros: 0, calls: 0, inputTokens: 0, outputTokens: 0 },
  metadata: {},
  createdBy: 'key_1',
  createdAt: new Date('2026-11-22T11:00:00Z'),
  expiresAt: new Date('2026-11-22T13:00:00Z'),
  closedAt: null,
  ...over,
});

const thrown = (fn: () => void): DomainError => {
  try {
    fn();
  } catch (err) {
    return err as DomainError;
  }
  throw new Error('did not throw');
};

describe('session status', () => {
  it('is expired the moment expires_at passes, whether or not it was swept', () => {
    expect(statusAt(session(), now)).toBe('open');
    expect(statusAt(session({ expiresAt: now }), now)).toBe('expired');
    expect(statusAt(session({ status: 'closed', expiresAt: now }), now)).toBe('closed');
  });

  it('refuses a closed or expired session with 409 session_not_open naming it', () => {
    expect(() => assertOpen(session(), now)).not.toThrow();
    const err = thrown(() => assertOpen(session({ expiresAt: new Date(now.getTime() - 1) }), now));
    expect(err.code).toBe('session_not_open');
    expect(err.extra).toEqual({ session_id: 'ses_1', status: 'expired' });
  });
});

const ONE_CALL: CapAmounts = { costMicros: 1, calls: 1, tokens: 1 };

describe('a cap already reached', () => {
  it.each([
    ['cost', { costMicros: 1_000_000, calls: 0, inputTokens: 0, outputTokens: 0 }, 1, 0.000001],
    ['calls', { costMicros: 0, calls: 10, inputTokens: 0, outputTokens: 0 }, 10, 1],
    ['tokens', { costMicros: 0, calls: 0, inputTokens: 600, outputTokens: 400 }, 1000, 1],
  ] as const)('refuses with 402 budget_exceeded when the %s cap is reached', (cap, usage, limit, needed) => {
    const err = thrown(() => assertFits(session({ usage }), NOTHING, ONE_CALL));
    expect(err.code).toBe('budget_exceeded');
    expect(err.extra).toEqual({ session_id: 'ses_1', cap, limit, remaining: 0, needed });
  });

  it('lets a session below every cap through, and one without call or token caps too', () => {
    const below = session({ usage: { costMicros: 999_999, calls: 9, inputTokens: 500, outputTokens: 499 } });
    expect(() => assertFits(below, NOTHING, ONE_CALL)).not.toThrow();
    const unbounded = session({
      limits: { maxCostMicros: 10, maxCalls: null, maxTokens: null },
      usage: { costMicros: 9, calls: 1e6, inputTokens: 1e9, outputTokens: 1e9 },
    });
    expect(() => assertFits(unbounded, NOTHING, ONE_CALL)).not.toThrow();
  });
});

describe('a worst case that does not fit what is left', () => {
  it('on a fresh session says what the call needs and that the whole cap remains (not 0)', () => {
    const err = thrown(() => assertFits(session(), NOTHING, { costMicros: 1_500_000, calls: 1, tokens: 10 }));
    expect(err.extra).toEqual({ session_id: 'ses_1', cap: 'cost', limit: 1, remaining: 1, needed: 1.5 });
    expect(err.message).toContain('needs up to $1.5');
    expect(err.message).toContain('$1 of $1 remains');
  });

  it('counts the reservations of calls in flight next to settled usage', () => {
    const settled = session({
      usage: { costMicros: 200_000, calls: 2, inputTokens: 100, outputTokens: 100 },
    });
    const need: CapAmounts = { costMicros: 300_000, calls: 1, tokens: 100 };
    expect(() => assertFits(settled, NOTHING, need)).not.toThrow();
    const err = thrown(() => assertFits(settled, { costMicros: 600_000, calls: 1, tokens: 0 }, need));
    expect(err.extra).toMatchObject({ cap: 'cost', limit: 1, remaining: 0.2, needed: 0.3 });
  });

  it.each([
    ['calls', { costMicros: 0, calls: 8, tokens: 0 }, { costMicros: 1, calls: 1, tokens: 1 }, 10, 0],
    ['tokens', { costMicros: 0, calls: 0, tokens: 700 }, { costMicros: 1, calls: 1, tokens: 301 }, 1000, 300],
  ] as const)('names the %s cap with its own units', (cap, held, need, limit, remaining) => {
    const tight = session({ usage: { costMicros: 0, calls: 2, inputTokens: 0, outputTokens: 0 } });
    const err = thrown(() => assertFits(tight, held, need));
    expect(err.extra).toMatchObject({ cap, limit, remaining, needed: need[cap] });
  });

  it('fits exactly at the cap', () => {
    expect(() =>
      assertFits(session(), NOTHING, { costMicros: 1_000_000, calls: 10, tokens: 1000 }),
    ).not.toThrow();
  });
});
