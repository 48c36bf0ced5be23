import { terminalDestination } from '../../infra/logger';

describe('where logs go', () => {
  it('pretty-prints for a person at a terminal in development', () => {
    expect(terminalDestination('development', true)).toBeDefined();
    expect(terminalDestination(undefined, true)).toBeDefined();
  });

  it('keeps JSON lines for pipes, files and production', () => {
    expect(terminalDestination('development', false)).toBeUndefined();
    expect(terminalDestination('development', undefined as unknown as boolean)).toBeUndefined();
    expect(terminalDestination('production', true)).toBeUndefined();
  });
});
