import type { ErrorCode } from '../../domain/errors';
import { bearerToken, isSameSecret } from '../auth/presented-secret';

/** Who may read /metrics: `open`, `off` (answer 404), or a bearer token's verdict. */
export type MetricsAccess = 'open' | 'off' | 'missing_token' | 'wrong_token' | 'token_ok';

const LOOPBACK = /^(localhost|::1|127(\.\d{1,3}){3}|::ffff:127(\.\d{1,3}){3})$/i;

export const isLoopback = (host: string): boolean => LOOPBACK.test(host.trim());

/**
 * A token, when configured, is always required. Without one, /metrics is open only on a loopback
 * bind (nothing else can reach it) and off otherwise.
 */
export function metricsAccess(
  host: string,
  token: string | undefined,
  authorization: string | undefined,
): MetricsAccess {
  if (!token) return isLoopback(host) ? 'open' : 'off';
  const sent = bearerToken(authorization);
  if (!sent) return 'missing_token';
  return isSameSecret(sent, token) ? 'token_ok' : 'wrong_token';
}

/** The contract's answer to a refused scrape: its status, error code and message. */
export function refusal(access: MetricsAccess): { status: number; code: ErrorCode; message: string } | null {
  switch (access) {
    case 'off':
      return { status: 404, code: 'not_found', message: 'no route GET /metrics' };
    case 'missing_token':
      return {
        status: 401,
        code: 'missing_credentials',
        message: 'send the metrics token as a Bearer token',
      };
    case 'wrong_token':
      return { status: 401, code: 'invalid_api_key', message: 'the metrics token is not valid' };
    default:
      return null;
  }
}
