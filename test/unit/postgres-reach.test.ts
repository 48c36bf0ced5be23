import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkReachableByPostgres, privateDirAbove } from '../../infra/embedded/postgres-reach';

/** As root, the quick start's PostgreSQL runs as `postgres`, which must reach its binaries and data. */
describe('checkReachableByPostgres', () => {
  let base: string;
  beforeEach(() => {
    base = mkdtempSync(join(tmpdir(), 'postgres-reach-'));
    chmodSync(base, 0o755);
  });
  afterEach(() => rmSync(base, { recursive: true, force: true }));

  it('passes when others may enter every directory above each path', () => {
    const data = join(base, 'open', '.data');
    mkdirSync(data, { recursive: true, mode: 0o755 });
    expect(privateDirAbove(data)).toBeNull();
    expect(() => checkReachableByPostgres([data, base])).not.toThrow();
  });

  it('names the private directory and what to do instead', () => {
    const data = join(base, 'private', 'checkout', '.data');
    mkdirSync(data, { recursive: true, mode: 0o755 });
    chmodSync(join(base, 'private'), 0o700);
    expect(privateDirAbove(data)).toBe(join(base, 'private'));
    expect(() => checkReachableByPostgres([base, data])).toThrow(
      new RegExp(`cannot enter ${join(base, 'private')} .*DATABASE_URL`),
    );
  });
});
