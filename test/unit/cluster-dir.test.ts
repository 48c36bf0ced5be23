import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clusterDir, othersCanReach } from '../../infra/embedded/cluster-dir';

/** Where the quick start's PostgreSQL cluster lives, when root runs it as the `postgres` user. */
describe('clusterDir', () => {
  let base: string;
  beforeEach(() => {
    base = mkdtempSync(join(tmpdir(), 'cluster-dir-'));
    chmodSync(base, 0o755);
  });
  afterEach(() => rmSync(base, { recursive: true, force: true }));

  it('is under the data directory when others may pass through every directory above it', () => {
    const data = join(base, 'open', '.data');
    mkdirSync(data, { recursive: true, mode: 0o755 });
    expect(othersCanReach(data)).toBe(true);
    expect(clusterDir(data, true)).toBe(join(data, 'postgres'));
  });

  it('moves to the shared root, under a name kept from start to start, when a directory above is private', () => {
    const data = join(base, 'private', '.data');
    mkdirSync(data, { recursive: true });
    chmodSync(join(base, 'private'), 0o700);
    expect(othersCanReach(data)).toBe(false);
    const shared = join(base, 'shared');
    const first = clusterDir(data, true, shared);
    expect(first.startsWith(join(shared, 'postgres-'))).toBe(true);
    expect(clusterDir(data, true, shared)).toBe(first);
    const other = join(base, 'private', 'other');
    mkdirSync(other);
    expect(clusterDir(other, true, shared)).not.toBe(first);
  });

  it('stays under the data directory for a user who is not root (the server runs as that user)', () => {
    const data = join(base, 'private', '.data');
    mkdirSync(data, { recursive: true });
    chmodSync(join(base, 'private'), 0o700);
    expect(clusterDir(data, false)).toBe(join(data, 'postgres'));
  });
});
