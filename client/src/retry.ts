import { networkError } from './errors';

/** Methods that change nothing more when sent twice. */
const REPLAYABLE_METHODS = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS']);
/** The longest a Retry-After is honoured for; past it the error is the caller's to handle. */
export const MAX_RETRY_DELAY_MS = 60_000;
const FIRST_BACKOFF_MS = 250;

export interface RetryOptions {
  fetch: typeof fetch;
  /** Retries after the first attempt. */
  retries: number;
  /** Named in the network error's message. */
  baseUrl: string;
}

/**
 * A fetch that retries what is safe to retry: a 429 always (the API refuses it before doing
 * anything), a 503 or a lost connection only when sending the request again cannot do the work
 * twice (an idempotent method, or a POST carrying an Idempotency-Key, which is sent again as is).
 * With no answer at all it throws a ControlPlaneError `network_error`.
 */
export function retryingFetch(options: RetryOptions): typeof fetch {
  return async (input, init) => {
    const request = input instanceof Request && !init ? input : new Request(input, init);
    const replayable = REPLAYABLE_METHODS.has(request.method) || request.headers.has('idempotency-key');
    for (let attempt = 0; ; attempt++) {
      const last = attempt >= options.retries;
      let response: Response;
      try {
        // A clone per attempt: a body can be read once, and a retry sends it again.
        response = await options.fetch(request.clone());
      } catch (error) {
        if (request.signal.aborted) throw error;
        if (last || !replayable) throw networkError(options.baseUrl, error);
        await sleep(backoffMs(attempt), request.signal);
        continue;
      }
      const retryable = response.status === 429 || (response.status === 503 && replayable);
      if (last || !retryable) return response;
      const delay = retryAfterMs(response.headers.get('retry-after')) ?? backoffMs(attempt);
      if (delay > MAX_RETRY_DELAY_MS) return response;
      await response.body?.cancel();
      await sleep(delay, request.signal);
    }
  };
}

const backoffMs = (attempt: number) => FIRST_BACKOFF_MS * 2 ** attempt;

/** Retry-After in seconds or as an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Waits `ms`, or rejects with the signal's reason once it aborts. */
export function sleep(ms: number, signal?: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
