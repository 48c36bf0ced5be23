import { DEFAULT_BASE_URL, serverRoot as rootOf } from '../transport';
import { UsageError } from './exit-codes';

/**
 * The server's root from --base-url, else CP_BASE_URL (empty counts as unset), else the default;
 * a value that cannot be one is a usage error, so no request is tried with it.
 */
export function baseUrlOf(flag: string | undefined, env: Record<string, string | undefined>): string {
  if (flag !== undefined) return serverRoot(flag, '--base-url');
  if (env.CP_BASE_URL) return serverRoot(env.CP_BASE_URL, 'CP_BASE_URL');
  return DEFAULT_BASE_URL;
}

/** The server's root (the client's: no trailing slashes or `/v1`), once the value is one. */
export function serverRoot(value: string, source: string): string {
  const url = URL.canParse(value) ? new URL(value) : undefined;
  const problem = url ? whyNotAServer(url) : 'not a URL';
  if (problem || !url)
    throw new UsageError(
      `${source} ${JSON.stringify(shown(value, url))}: ${problem}; give the server's http:// or https:// URL, e.g. ${DEFAULT_BASE_URL}`,
    );
  return rootOf(url.origin + url.pathname);
}

/** The value as it may be printed: a password in it is masked. */
function shown(value: string, url: URL | undefined): string {
  if (!url?.password) return value;
  const masked = new URL(url.href);
  masked.password = '***';
  return masked.href;
}

/** What fetch would refuse, or what would garble the paths appended to the URL. */
function whyNotAServer(url: URL): string | undefined {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `${url.protocol} is not http(s)`;
  if (url.username || url.password)
    return 'a URL with a user or password cannot be fetched (give the key with --api-key)';
  if (url.search || url.hash) return 'a query or fragment cannot precede the API’s paths';
  return undefined;
}
