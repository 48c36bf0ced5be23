/** The longest wait between two attempts at one delivery. */
export const MAX_RETRY_DELAY_MS = 3_600_000;

/** A delivery is retried until this long after it was created, then it is `failed`. */
export const DELIVERY_WINDOW_MS = 24 * 3_600_000;

/** Wait after the n-th failed attempt (n >= 1): the base, doubling each time, at most an hour. */
export const retryDelayMs = (failedAttempts: number, baseMs: number): number =>
  Math.min(baseMs * 2 ** Math.max(0, failedAttempts - 1), MAX_RETRY_DELAY_MS);

/** Whether the attempt after this failure would still start inside the delivery's window. */
export const mayRetry = (createdAt: Date, now: Date, failedAttempts: number, baseMs: number): boolean =>
  now.getTime() + retryDelayMs(failedAttempts, baseMs) <= createdAt.getTime() + DELIVERY_WINDOW_MS;
