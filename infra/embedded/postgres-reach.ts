import { statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/** The first directory at or above `path` that only its owner (and group) may enter, if any. */
export function privateDirAbove(path: string): string | null {
  for (let at = resolve(path); ; at = dirname(at)) {
    if ((statSync(at).mode & 0o001) === 0) return at;
    if (dirname(at) === at) return null;
  }
}

/**
 * As root the embedded PostgreSQL runs as the `postgres` user, which must pass through every
 * directory above its binaries (in node_modules) and its cluster (in the data directory). Under a
 * directory private to root (a clone in /root, a `mktemp -d` folder) it cannot, and the package's
 * own initdb would die of an unhandled EACCES: this says so first, and what to do instead.
 */
export function checkReachableByPostgres(paths: string[]): void {
  const blocked = paths.map(privateDirAbove).find((dir) => dir !== null);
  if (!blocked) return;
  throw new Error(
    `the embedded PostgreSQL runs as the postgres user when started as root, and that user cannot ` +
      `enter ${blocked} (only its owner may): put the checkout and CP_DATA_DIR where others may enter ` +
      `(e.g. under /srv or /opt), run as a user other than root, or set DATABASE_URL to a PostgreSQL you run`,
  );
}
