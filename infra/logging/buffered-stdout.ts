import pino from 'pino';

/** Lines wait at most this long before they are written. */
const LOG_FLUSH_MS = 200;
/** ...or until this many bytes wait, whichever comes first. */
const LOG_BUFFER_BYTES = 8 * 1024;

export interface BufferedDestination extends pino.DestinationStream {
  flush(): void;
  /** Stops the timer; what waits is still written at exit. */
  close(): void;
}

/**
 * JSON lines to a file descriptor, written in batches. pino's default destination hands every
 * line to the thread pool on its own, which cost the API about a twelfth of its CPU at one caller
 * (a thread wake-up and a write per request's access line). Here lines wait up to LOG_FLUSH_MS or
 * LOG_BUFFER_BYTES. pino writes what waits at exit, so only a hard kill (SIGKILL) loses lines:
 * at most the last LOG_FLUSH_MS. The timer only flushes when something waits: an idle process
 * makes no writes.
 */
export function bufferedDestination(fd = 1, flushMs = LOG_FLUSH_MS): BufferedDestination {
  const stream = pino.destination({ dest: fd, sync: false, minLength: LOG_BUFFER_BYTES });
  let waiting = false;
  const flush = () => {
    if (!waiting) return;
    waiting = false;
    stream.flush();
  };
  const timer = setInterval(flush, flushMs);
  timer.unref();
  return {
    write(line: string) {
      waiting = true;
      stream.write(line);
    },
    flush,
    close: () => clearInterval(timer),
  };
}
