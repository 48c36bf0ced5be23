import { execSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { signupOrg } from '../support/factories';
import { HttpClient } from '../support/http-client';
import { listeningUrl, runNpmScript, type ServiceProcess } from '../support/service-process';

jest.setTimeout(180_000);

let dataDir: string;
let proc: ServiceProcess | undefined;

beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'cp-quickstart-'));
});
afterAll(async () => {
  await proc?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** `ps` lines, with the given columns, of the processes whose command line names `dir`. */
const psLinesNaming = (dir: string, columns: string): string =>
  execSync(`ps -eo ${columns} | grep -F -- '${dir}' | grep -v grep || true`, { encoding: 'utf8' }).trim();

const processesUsing = (dir: string): string => psLinesNaming(dir, 'args');

/** The process groups of the embedded servers (their command lines name the data dir). */
const storeGroups = (dir: string): number[] =>
  psLinesNaming(dir, 'pgid=,args=')
    .split('\n')
    .filter((line) => /postgres -D|redis-server/.test(line))
    .map((line) => Number(line.trim().split(/\s+/)[0]));

describe('the quick start: npm start with no DATABASE_URL and no REDIS_URL', () => {
  it('brings up embedded PostgreSQL and Redis under the data dir, serves, and keeps data across restarts', async () => {
    const env = {
      DATABASE_URL: undefined,
      REDIS_URL: undefined,
      CP_DATA_DIR: dataDir,
      PORT: '0',
      LOG_LEVEL: 'info',
    };

    proc = runNpmScript('start', env);
    await proc.waitFor(/ready: listening/, 120_000);
    const http = new HttpClient(listeningUrl(proc));
    expect((await http.get('/ready')).body).toEqual({
      status: 'ready',
      checks: { database: 'ok', redis: 'ok' },
    });
    const org = await signupOrg(http);
    // A terminal's Ctrl-C signals the service's whole group: the stores must not be in it, so
    // that the service stops them only after its own graceful shutdown.
    const groups = storeGroups(dataDir);
    expect(groups.length).toBeGreaterThanOrEqual(1);
    expect(groups).not.toContain(proc.child.pid);
    const clean = await proc.stop();
    if (!clean) console.log(proc.output());
    expect(clean).toBe(true);
    expect(processesUsing(dataDir)).toBe('');

    proc = runNpmScript('start', env);
    await proc.waitFor(/ready: listening/, 120_000);
    const keys = await new HttpClient(listeningUrl(proc)).get<{ data: { name: string }[] }>(
      '/v1/keys',
      org.adminKey,
    );
    expect(keys.status).toBe(200);
    expect(keys.body.data.map((k) => k.name)).toContain('bootstrap');
    expect(await proc.stop()).toBe(true);
  });
});
