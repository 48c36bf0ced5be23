import { ProviderError } from '../../domain/providers';
import type { DeliveryEnvelope, SendResult, WebhookSender } from '../../domain/webhooks/deliver-webhook';
import { HttpTransport } from '../providers/http-transport';

/** Receivers answer in a few bytes; one that sends more is cut off rather than buffered. */
const MAX_RESPONSE_BYTES = 64 * 1024;

/** The transport's failures, in words that name no value the failure carried. */
function reasonOf(err: unknown, timeoutMs: number): string {
  if (!(err instanceof ProviderError)) return 'request failed';
  const code = /\((E[A-Z]+|UND_ERR_[A-Z_]+)\)/.exec(err.message)?.[1];
  switch (err.code) {
    case 'provider_timeout':
      return `no answer within ${timeoutMs} ms`;
    case 'provider_host_blocked':
      return 'the host is a loopback or private address';
    case 'provider_unreachable':
      return code ? `could not connect (${code})` : 'could not connect';
    case 'provider_connection_lost':
      return 'the connection was lost';
    case 'provider_bad_response':
      return `answer larger than ${MAX_RESPONSE_BYTES} bytes`;
    default:
      return 'request failed';
  }
}

/**
 * POSTs deliveries through the providers' HTTP transport, and so behind the same SSRF guard:
 * private hosts are refused before connecting and, for names, after DNS at connect time (unless
 * CP_ALLOW_PRIVATE_PROVIDER_HOSTS). undici's request follows no redirect. The answer's body is
 * read (to free the connection) and dropped.
 */
export class HttpWebhookSender implements WebhookSender {
  private readonly transport: HttpTransport;

  constructor(allowPrivateHosts: boolean) {
    this.transport = new HttpTransport({ allowPrivateHosts, maxResponseBytes: MAX_RESPONSE_BYTES });
  }

  async post(
    url: string,
    headers: Record<string, string>,
    envelope: DeliveryEnvelope,
    timeoutMs: number,
  ): Promise<SendResult> {
    try {
      // The transport sends JSON.stringify(envelope): the very text the signature was made over.
      const res = await this.transport.postJson(url, headers, envelope, timeoutMs);
      return { status: res.status };
    } catch (err) {
      return { status: null, error: reasonOf(err, timeoutMs) };
    }
  }

  close(): Promise<void> {
    return this.transport.close();
  }
}
