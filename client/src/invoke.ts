import { sleep } from './retry';
import { unwrap, type RawClient } from './transport';
import type { BodyOf, Invocation } from './types';

export type InvokeBody = BodyOf<'/v1/llm/invoke', 'post'>;

/** The statuses an invocation never leaves. `awaiting_approval` is not one: a person may still decide. */
export const FINAL_STATUSES: ReadonlySet<Invocation['status']> = new Set([
  'succeeded',
  'failed',
  'denied',
  'cancelled',
]);

export const isFinal = (invocation: Invocation) => FINAL_STATUSES.has(invocation.status);

export interface WaitOptions {
  /** Seconds each request may be held by the server (at most its limits.max_wait_seconds). Default 10. */
  waitSeconds?: number;
  /** When to stop waiting and return the invocation as it is. Default 5 minutes. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Each state seen, the first answer included (a CLI shows `awaiting_approval` with it). */
  onUpdate?(invocation: Invocation): void;
}

export interface InvokeOptions extends WaitOptions {
  /** Sent as Idempotency-Key; one is generated when not given. Retries reuse it either way. */
  idempotencyKey?: string;
}

const DEFAULT_WAIT_SECONDS = 10;
const DEFAULT_TIMEOUT_MS = 5 * 60_000;
/** A long poll answered sooner than this (a server shutting down answers at once) waits the rest. */
const MIN_POLL_INTERVAL_MS = 250;

/** Seconds to ask the server to hold the next request: never past the deadline. */
const waitFor = (deadline: number, waitSeconds: number) =>
  Math.max(0, Math.min(waitSeconds, Math.floor((deadline - Date.now()) / 1000)));

/** The invocation a Location header points at, resolved against the base URL. */
export function invocationIdFrom(location: string | null, baseUrl: string): string | undefined {
  if (!location) return undefined;
  const match = /\/v1\/llm\/invocations\/([^/?#]+)/.exec(new URL(location, baseUrl + '/').pathname);
  return match ? decodeURIComponent(match[1]!) : undefined;
}

/**
 * Submits a completion and waits for its end: the submit itself waits up to `waitSeconds`; a 202
 * answer says where to poll (Location), and that is long-polled until the invocation is final or
 * `timeoutMs` passes (then it is returned as last seen, not final).
 */
export async function invoke(
  raw: RawClient,
  baseUrl: string,
  body: InvokeBody,
  options: InvokeOptions = {},
): Promise<Invocation> {
  const deadline = Date.now() + (options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  const waitSeconds = options.waitSeconds ?? DEFAULT_WAIT_SECONDS;
  const { data, response } = await unwrap(
    raw.POST('/v1/llm/invoke', {
      body,
      params: {
        query: { wait: waitFor(deadline, waitSeconds) },
        header: options.idempotencyKey ? { 'Idempotency-Key': options.idempotencyKey } : {},
      },
      signal: options.signal,
    }),
  );
  options.onUpdate?.(data);
  if (response.status !== 202 || isFinal(data)) return data;
  const id = invocationIdFrom(response.headers.get('location'), baseUrl) ?? data.id;
  return waitForInvocation(raw, id, { ...options, timeoutMs: Math.max(0, deadline - Date.now()) }, data);
}

/** Long-polls GET /v1/llm/invocations/{id} until the invocation is final or the time is up. */
export async function waitForInvocation(
  raw: RawClient,
  id: string,
  options: WaitOptions = {},
  seen?: Invocation,
): Promise<Invocation> {
  const deadline = Date.now() + (options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  const waitSeconds = options.waitSeconds ?? DEFAULT_WAIT_SECONDS;
  let invocation = seen;
  while (!invocation || (!isFinal(invocation) && Date.now() < deadline)) {
    const asked = Date.now();
    invocation = await getInvocation(raw, id, waitFor(deadline, waitSeconds), options.signal);
    options.onUpdate?.(invocation);
    const early = MIN_POLL_INTERVAL_MS - (Date.now() - asked);
    if (!isFinal(invocation) && early > 0) await sleep(early, options.signal);
  }
  return invocation;
}

export async function getInvocation(
  raw: RawClient,
  id: string,
  waitSeconds?: number,
  signal?: AbortSignal,
): Promise<Invocation> {
  const query = waitSeconds ? { wait: waitSeconds } : {};
  const answer = raw.GET('/v1/llm/invocations/{id}', { params: { path: { id }, query }, signal });
  return (await unwrap(answer)).data;
}
