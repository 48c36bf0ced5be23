import { lookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { Agent, request, type Dispatcher } from 'undici';
import { isLocalName, isPrivateAddress } from '../../domain/credentials/provider-host';
import { ProviderError } from '../../domain/providers';
import { abortedError, badResponse, networkError, timeoutError } from './provider-errors';

export interface TransportOptions {
  /** CP_ALLOW_PRIVATE_PROVIDER_HOSTS: let credentials reach loopback and private addresses. */
  allowPrivateHosts: boolean;
  /**
   * A hostile or broken provider cannot make a worker buffer more than this: a whole answer's
   * bytes, or a streamed answer's characters and any one of its events (8 MiB unless told).
   */
  maxResponseBytes?: number;
}

/**
 * A stream frames every piece in an event of its own (about 200 bytes a token from OpenAI), so
 * its bytes may run to this many times the cap; what it holds, its answer, stays under the cap.
 */
const STREAM_FRAMING_FACTOR = 8;

export interface JsonResponse {
  status: number;
  retryAfter: string | null;
  json: unknown;
  text: string;
}

/** A streamed answer: a 2xx one as its body's chunks (size-capped), any other read whole. */
export type StreamResponse =
  | { ok: true; status: number; chunks: AsyncIterable<Buffer>; signal: AbortSignal; deadline: AbortSignal }
  | ({ ok: false } & JsonResponse);

const blocked = (host: string) =>
  new ProviderError(
    'final',
    'provider_host_blocked',
    `provider host ${host} is a loopback or private address; CP_ALLOW_PRIVATE_PROVIDER_HOSTS=true allows it`,
  );

type LookupCallback = (err: Error | null, address: string | LookupAddress[], family?: number) => void;

/**
 * Resolves like dns.lookup, then refuses private answers: checked at connect time, after DNS,
 * so a public name that resolves (or is rebound) to an internal address is still refused.
 */
function guardedLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, []);
    if (addresses.some((a) => isPrivateAddress(a.address))) return callback(blocked(hostname), []);
    if (options.all) return callback(null, addresses);
    const first = addresses[0];
    if (!first) return callback(new Error(`no address for ${hostname}`), []);
    callback(null, first.address, first.family);
  });
}

/**
 * The one HTTP client of the provider adapters: undici's request API on a keep-alive pool
 * (leaner than fetch and web streams at the throughput the invoke path needs), with an SSRF
 * guard, a whole-call deadline and a cap on response size.
 */
export class HttpTransport {
  private readonly agent: Agent;
  /** The cap on an answer: see TransportOptions.maxResponseBytes. */
  readonly maxBytes: number;

  constructor(private readonly options: TransportOptions) {
    this.maxBytes = options.maxResponseBytes ?? 8 * 1024 * 1024;
    this.agent = new Agent({
      keepAliveTimeout: 30_000,
      connect: options.allowPrivateHosts ? {} : { lookup: guardedLookup },
    });
  }

  async postJson(
    url: string,
    headers: Record<string, string>,
    body: unknown,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<JsonResponse> {
    const call = this.send(url, 'application/json', headers, body, timeoutMs, signal);
    try {
      const res = await call.response;
      const text = await this.readCapped(res.body);
      return { status: res.statusCode, retryAfter: retryAfterOf(res), json: parseJson(text), text };
    } catch (err) {
      throw failure(err, call);
    }
  }

  /**
   * As postJson, for a streamed answer (server-sent events): the body of a 2xx answer is read by
   * the caller as it arrives, under the same deadline and abort signal; its bytes may run to
   * STREAM_FRAMING_FACTOR times the cap (the caller caps its answer and events).
   */
  async postStream(
    url: string,
    headers: Record<string, string>,
    body: unknown,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<StreamResponse> {
    const call = this.send(url, 'text/event-stream', headers, body, timeoutMs, signal);
    try {
      const res = await call.response;
      if (res.statusCode >= 200 && res.statusCode < 300)
        return {
          ok: true,
          status: res.statusCode,
          chunks: this.capped(res.body, this.maxBytes * STREAM_FRAMING_FACTOR),
          signal: call.signal,
          deadline: call.deadline,
        };
      const text = await this.readCapped(res.body);
      return {
        ok: false,
        status: res.statusCode,
        retryAfter: retryAfterOf(res),
        json: parseJson(text),
        text,
      };
    } catch (err) {
      throw failure(err, call);
    }
  }

  /**
   * Starts one POST under the SSRF guard and a whole-call deadline. The caller awaits the answer
   * itself (no extra async layer on the invoke path) and maps what fails with `failure`.
   */
  private send(
    url: string,
    accept: string,
    headers: Record<string, string>,
    body: unknown,
    timeoutMs: number,
    callerSignal: AbortSignal | undefined,
  ): Call {
    const target = new URL(url);
    const host = target.hostname.replace(/^\[|\]$/g, '');
    if (!this.options.allowPrivateHosts && (isPrivateAddress(host) || isLocalName(host))) throw blocked(host);
    const deadline = AbortSignal.timeout(timeoutMs);
    const signal = callerSignal ? AbortSignal.any([deadline, callerSignal]) : deadline;
    const response = request(target, {
      method: 'POST',
      dispatcher: this.agent,
      headers: { 'content-type': 'application/json', accept, ...headers },
      body: JSON.stringify(body),
      signal,
    });
    return { response, signal, deadline, callerSignal, timeoutMs };
  }

  close(): Promise<void> {
    return this.agent.close();
  }

  private async *capped(
    body: AsyncIterable<Buffer> & { destroy(): void },
    max: number,
  ): AsyncGenerator<Buffer> {
    let size = 0;
    for await (const chunk of body) {
      size += chunk.length;
      if (size > max) {
        body.destroy();
        throw badResponse(`response larger than ${max} bytes`);
      }
      yield chunk;
    }
  }

  /** As `capped`, gathered whole; it reads the body itself, without a generator's extra turns per chunk. */
  private readCapped(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<string> {
    return gatherCapped(body, this.maxBytes, () => body.destroy());
  }
}

/** A body read to its end as text within `max` bytes; past it, `drop` is called and it fails. */
export async function gatherCapped(
  body: AsyncIterable<Buffer>,
  max: number,
  drop: () => void = () => undefined,
): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > max) {
      drop();
      throw badResponse(`response larger than ${max} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

interface Call {
  response: Promise<Dispatcher.ResponseData>;
  /** The deadline and the caller's abort together: what the request and its reading obey. */
  signal: AbortSignal;
  deadline: AbortSignal;
  callerSignal: AbortSignal | undefined;
  timeoutMs: number;
}

/** What went wrong on the way (connect, send, read), as a ProviderError that says which. */
function failure(err: unknown, call: Call): ProviderError {
  if (err instanceof ProviderError) return err;
  if (call.deadline.aborted) return timeoutError(call.timeoutMs);
  if (call.callerSignal?.aborted) return abortedError();
  return unwrapBlocked(err) ?? networkError(err);
}

const retryAfterOf = (res: Dispatcher.ResponseData): string | null => {
  const value = res.headers['retry-after'];
  return typeof value === 'string' ? value : null;
};

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};

/** undici wraps the lookup's error; the blocked-host decision must survive that. */
function unwrapBlocked(err: unknown): ProviderError | null {
  for (
    let e = err as { cause?: unknown } | undefined, depth = 0;
    e && depth < 5;
    e = e.cause as typeof e, depth++
  )
    if (e instanceof ProviderError) return e;
  return null;
}
