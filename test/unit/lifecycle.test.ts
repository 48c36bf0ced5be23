import { INVOCATION_STATUSES } from '../../domain/invocations/invocation';
import {
  CANCELLABLE,
  LIFECYCLE,
  REAPABLE,
  canMove,
  isTerminal,
  stageOf,
  statusesInto,
  statusesOf,
} from '../../domain/invocations/lifecycle';

describe('the invocation lifecycle table', () => {
  it('has a rule for every status, and every move it allows names a status', () => {
    expect(Object.keys(LIFECYCLE).sort()).toEqual([...INVOCATION_STATUSES].sort());
    for (const rule of Object.values(LIFECYCLE))
      for (const next of rule.next) expect(INVOCATION_STATUSES).toContain(next);
  });

  it('derives what may be cancelled: everything before the provider is called', () => {
    expect([...CANCELLABLE].sort()).toEqual(['awaiting_approval', 'evaluating', 'queued']);
    expect(canMove('running', 'cancelled')).toBe(false);
  });

  it('derives the final statuses, which allow no move at all', () => {
    expect(INVOCATION_STATUSES.filter(isTerminal).sort()).toEqual([
      'cancelled',
      'denied',
      'failed',
      'succeeded',
    ]);
    expect(statusesInto('succeeded')).toEqual(['running']);
  });

  it('derives the stage jobs and what the reaper watches (not a paused state, whose approval expires it)', () => {
    expect(stageOf('queued')).toBe('invocation.evaluate');
    expect(stageOf('running')).toBe('invocation.run');
    expect(stageOf('awaiting_approval')).toBeNull();
    expect(statusesOf('invocation.run')).toEqual(['running']);
    expect([...REAPABLE].sort()).toEqual(['evaluating', 'queued', 'running']);
  });

  it('pauses only a decision in progress; a resumed invocation may still be denied when the caps refuse it', () => {
    expect(statusesInto('awaiting_approval')).toEqual(['queued', 'evaluating']);
    expect(LIFECYCLE.awaiting_approval.next).toEqual(['running', 'denied', 'cancelled']);
    expect(canMove('running', 'denied')).toBe(true);
    expect(canMove('awaiting_approval', 'succeeded')).toBe(false);
  });
});
