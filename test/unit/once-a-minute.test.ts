import { LOG_EVERY_MS, OnceAMinute } from '../../infra/logging/once-a-minute';

describe('a repeating failure logged once a minute per key', () => {
  it('is due the first time, then once a minute with how many were left out, each key on its own', () => {
    let now = 0;
    const gate = new OnceAMinute(() => now);
    expect(gate.due('a')).toEqual({ log: true, skipped: 0 });
    expect(gate.due('b')).toEqual({ log: true, skipped: 0 });
    now += LOG_EVERY_MS - 1;
    expect(gate.due('a')).toEqual({ log: false });
    expect(gate.due('a')).toEqual({ log: false });
    now += 1;
    expect(gate.due('a')).toEqual({ log: true, skipped: 2 });
    expect(gate.due('b')).toEqual({ log: true, skipped: 0 });
  });
});
