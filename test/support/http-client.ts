export interface HttpResult<T = Record<string, unknown>> {
  status: number;
  body: T;
  headers: Headers;
}

export interface CallOptions {
  token?: string | undefined;
  body?: unknown;
  /** Sent as is (bytes too), with the given or no content type. */
  rawBody?: string | Uint8Array;
  headers?: Record<string, string>;
}

/** A small fetch wrapper for driving the API over real HTTP. */
export class HttpClient {
  constructor(readonly baseUrl: string) {}

  async call<T = Record<string, unknown>>(
    method: string,
    path: string,
    options: CallOptions = {},
  ): Promise<HttpResult<T>> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    let body: string | Uint8Array | undefined = options.rawBody;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(this.baseUrl + path, { method, headers, body: body as BodyInit | undefined });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : {}) as T, headers: res.headers };
  }

  get = <T = Record<string, unknown>>(path: string, token?: string) => this.call<T>('GET', path, { token });
  post = <T = Record<string, unknown>>(path: string, body?: unknown, token?: string) =>
    this.call<T>('POST', path, { body, token });
  delete = <T = Record<string, unknown>>(path: string, token?: string) =>
    this.call<T>('DELETE', path, { token });
}
