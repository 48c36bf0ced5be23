import type { CompletionRequest } from '../../domain/providers';
import type { HttpTransport } from './http-transport';
import { badResponse, errorFromStatus, providerMessage, scrubError, scrubSecret } from './provider-errors';

/**
 * Posts a provider request (with the caller's W3C trace context, so the provider's side of the
 * call joins the trace); a non-2xx answer or a failed call becomes a classified ProviderError
 * without the secret.
 */
export async function callProvider(
  transport: HttpTransport,
  req: CompletionRequest,
  url: string,
  headers: Record<string, string>,
  body: unknown,
): Promise<unknown> {
  const res = await transport
    .postJson(url, { ...req.trace, ...headers }, body, req.timeoutMs, req.signal)
    .catch((err: unknown) => {
      throw scrubError(err, req.secret);
    });
  if (res.status < 200 || res.status >= 300)
    throw errorFromStatus(
      res.status,
      scrubSecret(providerMessage(res.json, res.text), req.secret),
      res.retryAfter,
    );
  if (res.json === undefined || res.json === null || typeof res.json !== 'object')
    throw badResponse('not a JSON object', res.status);
  return res.json;
}

export const isCount = (n: unknown): n is number => typeof n === 'number' && Number.isInteger(n) && n >= 0;

export const joinUrl = (base: string, path: string): string => `${base.replace(/\/+$/, '')}${path}`;
