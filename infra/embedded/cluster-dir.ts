import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** Where the quick start keeps a cluster its `postgres` user could not reach under the data directory. */
export const SHARED_CLUSTERS = '/var/lib/control-plane';

/** Whether a user other than the owner may pass through `dir` and every directory above it (o+x). */
export function othersCanReach(dir: string): boolean {
  for (let at = resolve(dir); ; at = dirname(at)) {
    if ((statSync(at).mode & 0o001) === 0) return false;
    if (dirname(at) === at) return true;
  }
}

/**
 * Where the embedded PostgreSQL keeps its cluster: `<dataDir>/postgres`. As root the server runs as
 * the `postgres` user, which must pass through every directory above it; a data directory inside
 * a private one (a clone under /root, a `mktemp -d`) it cannot reach, so the cluster then lives in
 * `sharedRoot`, under a name drawn from the data directory's path (the same one on every start).
 */
export function clusterDir(dataDir: string, asRoot: boolean, sharedRoot = SHARED_CLUSTERS): string {
  if (!asRoot || othersCanReach(dataDir)) return join(dataDir, 'postgres');
  const name = createHash('sha256').update(resolve(dataDir)).digest('hex').slice(0, 16);
  return join(sharedRoot, `postgres-${name}`);
}
