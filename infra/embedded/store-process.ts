import { spawn } from 'node:child_process';

/**
 * Runs the server in the background, then stops it with the signal in $1 once its standard input
 * (the service's end of a pipe) reads end-of-file: when the service closes it to stop the server,
 * and also when the service dies, since the kernel then closes it. A server that ends on its own
 * ends the watch too, and the shell waits for both, so it leaves no zombie behind. A background
 * job's stdin is /dev/null unless redirected, hence fd 3.
 */
const WRAPPER = `
signal=$1; shift
exec 3<&0
"$@" </dev/null 3<&- &
server=$!
(read -r _ <&3; kill -s "$signal" "$server" 2>/dev/null) &
watch=$!
wait "$server"; status=$?
kill "$watch" 2>/dev/null
wait "$watch"
exit "$status"
`;

export interface StoreProcess {
  pid: number;
  /** Resolves once the server and its wrapper have exited. */
  exited: Promise<void>;
  /** Asks the server to stop with its signal, and waits for it. */
  stop(): Promise<void>;
}

export interface StoreOptions {
  /** The signal that stops the server cleanly (PostgreSQL: SIGINT, a fast shutdown; Redis: SIGTERM). */
  stopSignal: 'SIGINT' | 'SIGTERM';
  /** Each chunk of the server's output, stdout and stderr. */
  onOutput(text: string): void;
  /** Run the server as this user (PostgreSQL refuses to run as root). */
  uid?: number;
  gid?: number;
  env?: NodeJS.ProcessEnv;
}

/**
 * An embedded store's server in a process group of its own, so the SIGINT a terminal's Ctrl-C
 * sends to `npm start`'s group reaches only the service, which then stops the stores after its
 * own graceful shutdown (before, the stores went down at once, under jobs still running). The
 * pipe on its standard input keeps it from outliving the service, whatever ends the service.
 */
export function spawnStore(binary: string, args: string[], options: StoreOptions): StoreProcess {
  const child = spawn('/bin/sh', ['-c', WRAPPER, 'store', options.stopSignal.slice(3), binary, ...args], {
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
    ...(options.uid !== undefined ? { uid: options.uid } : {}),
    ...(options.gid !== undefined ? { gid: options.gid } : {}),
    ...(options.env ? { env: options.env } : {}),
  });
  child.stdout.on('data', (d) => options.onOutput(String(d)));
  child.stderr.on('data', (d) => options.onOutput(String(d)));
  child.stdin.on('error', () => undefined); // the wrapper already gone: nothing left to stop
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', (err) => {
      options.onOutput(`could not run ${binary}: ${err.message}`);
      resolve();
    });
  });
  return {
    pid: child.pid ?? 0,
    exited,
    stop: async () => {
      child.stdin.end();
      await exited;
    },
  };
}

/** Longest a server may take to start (PostgreSQL replaying its log after a crash included). */
const START_TIMEOUT_MS = 60_000;

/**
 * Waits for `ready`; if it fails, does not come within `timeoutMs`, or the server exits first,
 * stops the server and says so.
 */
export async function whenReady(
  server: StoreProcess,
  ready: Promise<void>,
  name: string,
  timeoutMs = START_TIMEOUT_MS,
): Promise<void> {
  const exitedFirst = server.exited.then(() => {
    throw new Error(`${name} exited while starting; run with LOG_LEVEL=debug to see its log`);
  });
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(`${name} was not ready within ${timeoutMs} ms; run with LOG_LEVEL=debug to see its log`),
        ),
      timeoutMs,
    );
  });
  // Promise.race listens to all three, so the exit after a successful start is no unhandled rejection.
  await Promise.race([ready, exitedFirst, late])
    .catch(async (err: unknown) => {
      await server.stop();
      throw err;
    })
    .finally(() => clearTimeout(timer));
}
