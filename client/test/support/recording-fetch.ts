import { createServer } from 'node:net';

/** One exchange the client had with the server, as its fetch saw it. */
export interface Exchange {
  method: string;
  url: URL;
  requestHeaders: Headers;
  /** Absent when no answer came (or the test dropped it). */
  status?: number;
  responseHeaders?: Headers;
}

export interface RecordingFetch {
  fetch: typeof fetch;
  exchanges: Exchange[];
  /** Exchanges whose path is `pathname` (and method, when given). */
  to(pathname: string, method?: string): Exchange[];
}

/**
 * A real fetch that records every exchange. `intercept` may answer instead of the server (return a
 * Response), or act after the server answered (`after`: return an Error to drop the answer).
 */
export function recordingFetch(
  hooks: {
    before?(request: Request, exchange: Exchange): Response | undefined;
    after?(request: Request, response: Response, exchange: Exchange): Error | undefined;
  } = {},
): RecordingFetch {
  const exchanges: Exchange[] = [];
  const send = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const request = input instanceof Request && !init ? input : new Request(input, init);
    const exchange: Exchange = {
      method: request.method,
      url: new URL(request.url),
      requestHeaders: new Headers(request.headers),
    };
    exchanges.push(exchange);
    const response = hooks.before?.(request, exchange) ?? (await fetch(request));
    const dropped = hooks.after?.(request, response, exchange);
    if (dropped) {
      await response.body?.cancel();
      throw dropped;
    }
    exchange.status = response.status;
    exchange.responseHeaders = response.headers;
    return response;
  };
  return {
    fetch: send as typeof fetch,
    exchanges,
    to: (pathname, method) =>
      exchanges.filter((e) => e.url.pathname === pathname && (!method || e.method === method)),
  };
}

/** A port nothing listens on: bound by the OS, then closed. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** `true` only for `any`: `const untyped: IsAny<typeof x> = false` fails to compile if x is untyped. */
export type IsAny<T> = 0 extends 1 & T ? true : false;
