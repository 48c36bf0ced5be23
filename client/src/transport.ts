import { randomUUID } from 'node:crypto';
import createClient, { type Client, type Middleware } from 'openapi-fetch';
import { errorFromResponse, notTheApi } from './errors';
import type { paths } from './openapi';
import { retryingFetch } from './retry';

export type RawClient = Client<paths>;

export interface ControlPlaneOptions {
  /** Default: CP_BASE_URL, else http://127.0.0.1:8080. */
  baseUrl?: string;
  /** A csk_ API key or a css_ session token. Default: CP_API_KEY. */
  apiKey?: string;
  fetch?: typeof fetch;
  /** Retries of 429s, 503s and lost connections (see retryingFetch). Default 2. */
  retries?: number;
  userAgent?: string;
}

/** The POSTs that take an Idempotency-Key: each gets one, so a retry cannot create a second thing. */
export const IDEMPOTENT_POSTS: ReadonlySet<string> = new Set([
  '/v1/keys',
  '/v1/credentials',
  '/v1/sessions',
  '/v1/llm/invoke',
  '/v1/webhooks',
]);

const idempotencyKeys: Middleware = {
  onRequest({ request, schemaPath }) {
    if (
      request.method === 'POST' &&
      IDEMPOTENT_POSTS.has(schemaPath) &&
      !request.headers.has('idempotency-key')
    )
      request.headers.set('Idempotency-Key', randomUUID());
    return undefined;
  },
};

export const DEFAULT_BASE_URL = 'http://127.0.0.1:8080';

/**
 * The server's root: trailing slashes and a trailing `/v1` dropped, since every path here starts
 * with `/v1` and the URL an OpenAI SDK is given (README) ends in it.
 */
export const serverRoot = (url: string): string =>
  url.replace(/\/+$/, '').replace(/\/v1$/, '').replace(/\/+$/, '');

/** What an Authorization header can carry: visible ASCII, no spaces or line breaks. */
const HEADER_SAFE = /^[\x21-\x7e]+$/;

/**
 * Why `apiKey` cannot be sent, or null. Said without the key: the Headers class would refuse it
 * with the whole secret in its message.
 */
export const apiKeyProblem = (apiKey: string): string | null =>
  HEADER_SAFE.test(apiKey)
    ? null
    : 'the API key holds a space, a line break or a character outside ASCII (a key file with a second line, or quotes pasted with it?)';

/** The typed openapi-fetch client every resource calls through. */
export function createRawClient(options: ControlPlaneOptions): { raw: RawClient; baseUrl: string } {
  const baseUrl = serverRoot(options.baseUrl ?? process.env.CP_BASE_URL ?? DEFAULT_BASE_URL);
  const apiKey = options.apiKey ?? process.env.CP_API_KEY;
  const problem = apiKey ? apiKeyProblem(apiKey) : null;
  if (problem) throw new TypeError(problem);
  const headers: Record<string, string> = { 'User-Agent': options.userAgent ?? 'control-plane-client' };
  if (apiKey) headers.Authorization = `Bearer ${apiKey}`;
  const raw = createClient<paths>({
    baseUrl,
    headers,
    fetch: retryingFetch({
      fetch: options.fetch ?? globalThis.fetch,
      retries: options.retries ?? 2,
      baseUrl,
    }),
  });
  raw.use(idempotencyKeys);
  return { raw, baseUrl };
}

/** An openapi-fetch answer: its data, or a ControlPlaneError for anything but a 2xx. */
export async function unwrap<T>(
  call: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<{ data: T; response: Response }> {
  const { data, error, response } = await call.catch((err: unknown) => {
    // openapi-fetch reads a 2xx body as JSON; what is not JSON did not come from the API.
    throw err instanceof SyntaxError ? notTheApi(err) : err;
  });
  if (!response.ok) throw errorFromResponse(response, error);
  return { data: data as T, response };
}

/** Only the data of a successful answer. */
export const dataOf = async <T>(call: Promise<{ data?: T; error?: unknown; response: Response }>) =>
  (await unwrap(call)).data;
