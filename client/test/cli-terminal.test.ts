import { execFile, execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { canSpinOn } from '../src/cli/io';

/**
 * The spinner is drawn only on a terminal that reports its width: nanospinner divides by it, and
 * a pty never sized (0 columns) had it clear lines forever, the CLI hung at full CPU.
 */
describe('canSpinOn', () => {
  it('draws on a terminal with columns, not on a pipe or a terminal of 0 columns', () => {
    expect(canSpinOn({ isTTY: true, columns: 80 })).toBe(true);
    expect(canSpinOn({ isTTY: true, columns: 0 })).toBe(false);
    expect(canSpinOn({ isTTY: true })).toBe(false);
    expect(canSpinOn({ columns: 80 })).toBe(false);
  });
});

const hasScript = (() => {
  try {
    execFileSync('script', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

// util-linux's `script` runs the CLI on a fresh pty; without a terminal of its own it is 0x0.
(hasScript ? it : it.skip)('exits on a pty of 0 columns instead of spinning forever', async () => {
  const bin = join(__dirname, '..', 'bin', 'control-plane.js');
  // A closed port: the request fails at once, after the spinner has started.
  const command = `${process.execPath} ${bin} audit verify --base-url http://127.0.0.1:9 --api-key csk_x`;
  const code = await new Promise<number | null>((resolve) => {
    const child = execFile('script', ['-qec', command, '/dev/null'], { timeout: 10_000 }, () =>
      resolve(child.exitCode),
    );
  });
  expect(code).not.toBeNull();
  expect(code).toBeGreaterThan(0);
});
