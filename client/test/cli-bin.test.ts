import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { startTestApp, type TestApp } from '../../test/support/test-app';
import { signupOrg, type SignedUpOrg } from '../../test/support/factories';

const BIN = join(__dirname, '..', 'bin', 'control-plane.js');

/** The executable as a user runs it: a child process, its exit status, its streams. */
function spawnCli(argv: string[], env: Record<string, string>) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = execFile(
      process.execPath,
      [BIN, ...argv],
      { env: { PATH: process.env.PATH, ...env } },
      (_e, stdout, stderr) => resolve({ code: child.exitCode, stdout, stderr }),
    );
  });
}

describe('control-plane CLI: the executable', () => {
  let app: TestApp;
  let org: SignedUpOrg;

  beforeAll(async () => {
    app = await startTestApp();
    org = await signupOrg(app.http);
  });
  afterAll(() => app?.close());

  it('prints its help and exits 0', async () => {
    const { code, stdout } = await spawnCli(['--help'], {});
    expect(code).toBe(0);
    expect(stdout).toContain('Usage: control-plane');
    expect(stdout).toContain('Exit codes:');
  });

  it('lists keys as JSON with the key and server from the environment', async () => {
    const { code, stdout, stderr } = await spawnCli(['keys', 'list', '--json'], {
      CP_API_KEY: org.adminKey,
      CP_BASE_URL: app.http.baseUrl,
    });
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    const page = JSON.parse(stdout) as { data: { id: string }[] };
    expect(page.data.map((k) => k.id)).toEqual([org.adminKeyId]);
  });

  it('sets the exit status: 2 without a key', async () => {
    const { code, stderr } = await spawnCli(['keys', 'list'], { CP_BASE_URL: app.http.baseUrl });
    expect(code).toBe(2);
    expect(stderr).toContain('no API key');
  });
});
