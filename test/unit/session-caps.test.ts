import { DomainError } from '../../domain/errors';
import { assertNotExhausted, assertOpen, statusAt, type Session } from '../../domain/sessions/session';

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

describe('a cap already reached', () => {
  it.each([
    ['cost', { costMicros: 1_000_000, calls: 0, inputTokens: 0, outputTokens: 0 }, 1],
    ['calls', { costMicros: 0, calls: 10, inputTokens: 0, outputTokens: 0 }, 10],
    ['tokens', { costMicros: 0, calls: 0, inputTokens: 600, outputTokens: 400 }, 1000],
  ] as const)('refuses with 402 budget_exceeded when the %s cap is reached', (cap, usage, limit) => {
    const err = thrown(() => assertNotExhausted(session({ usage })));
    expect(err.code).toBe('budget_exceeded');
    expect(err.extra).toEqual({ session_id: 'ses_1', cap, limit, remaining: 0 });
  });

  it('lets a session below every cap through, and one without call or token caps too', () => {
    expect(() =>
      assertNotExhausted(
        session({ usage: { costMicros: 999_999, calls: 9, inputTokens: 500, outputTokens: 499 } }),
      ),
    ).not.toThrow();
    const unbounded = session({
      limits: { maxCostMicros: 10, maxCalls: null, maxTokens: null },
      usage: { costMicros: 9, calls: 1e6, inputTokens: 1e9, outputTokens: 1e9 },
    });
    expect(() => assertNotExhausted(unbounded)).not.toThrow();
  });
});
