import { execFile } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '../..');

/**
 * Runs a script as `npm run` would (tsx), with no stores needed: help and bad arguments exit first.
 * Asynchronously, so the Jest worker's event loop keeps turning through the file's many spawns.
 */
const run = (script: string, args: string[]) =>
  new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', join(ROOT, script), ...args],
      { cwd: ROOT, encoding: 'utf8', timeout: 20_000 },
      (err, stdout, stderr) =>
        resolve({ status: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr }),
    );
  });

// Each script with an argument it must refuse.
const SCRIPTS: [string, string[]][] = [
  ['bench/invoke.ts', ['--seconds', 'many']],
  ['bench/chat.ts', ['--concurrency', '0']],
  ['bench/invoke.ts', ['--runtime', 'deno']],
  ['bench/invoke.ts', ['--open-loop=yes']],
  ['bench/invoke.ts', ['--apis', 'two']],
  ['bench/invoke.ts', ['--workers', '-1']],
  ['bench/invoke.ts', ['--prompt-bytes', 'big']],
  ['bench/memory.ts', ['--invokes', 'lots']],
  ['bench/scaling.ts', ['--seconds', '0']],
  ['bench/scaling.ts', ['--warmup', 'long']],
  ['bench/evaluate.ts', ['--nope']],
  ['bench/audit-writers.ts', ['fifty']],
  ['bench/audit-seal.ts', ['--events', 'x']],
  ['bench/provider-client.ts', ['-3']],
  ['bench/ab.ts', ['--base', 'HEAD', '--pairs', 'two']],
  ['bench/ab.ts', []],
  ['bench/ab.ts', ['--base', 'no-such-revision']],
  ['bench/peer.ts', []],
  ['bench/peer.ts', ['--peers', '/no/such/dir']],
  ['scripts/generate-master-key.ts', ['--nope']],
  ['scripts/reseal-credentials.ts', ['--nope']],
];

describe.each(SCRIPTS)('%s', (script, badArgs) => {
  it('prints its usage for --help and exits 0', async () => {
    const result = await run(script, ['--help']);
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(/^(Usage: )?npm run /);
    expect(result.status).toBe(0);
  });

  it('refuses a bad argument with what is wrong and the usage, exit 2', async () => {
    const result = await run(script, badArgs);
    expect(result.status).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/npm run /);
    expect(result.stderr.split('\n')[0]).not.toMatch(/^\s*at /);
  });
});
