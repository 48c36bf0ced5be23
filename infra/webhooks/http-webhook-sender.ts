import { ProviderError } from '../../domain/providers';
import type { DeliveryEnvelope, SendResult, WebhookSender } from '../../domain/webhooks/deliver-webhook';
import { HttpTransport } from '../providers/http-transport';

/**
 * Receivers answer in a few bytes; one that sends more is cut off rather than buffered. Past this
 * many bytes a 2xx answer's body is no longer read (the delivery is made: Standard Webhooks judge
 * it by the status alone), and any other answer is an attempt that failed.
 */
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
 * Reads a 2xx answer's body up to the cap and drops it; stopping (or the transport's cap throwing)
 * destroys the rest. Nothing that happens here fails the delivery.
 */
async function drain(chunks: AsyncIterable<Buffer>): Promise<void> {
  let size = 0;
  try {
    for await (const chunk of chunks) {
      size += chunk.length;
      if (size >= MAX_RESPONSE_BYTES) break;
    }
  } catch {
    // Past the cap, the deadline or a lost connection: the receiver already answered 2xx.
  }
}

/**
 * POSTs deliveries through the providers' HTTP transport, and so behind the same SSRF guard:
 * private hosts are refused before connecting and, for names, after DNS at connect time (unless
 * CP_ALLOW_PRIVATE_WEBHOOK_HOSTS). undici's request follows no redirect. The answer's body is
 * read (to free the connection) and dropped: a 2xx one up to MAX_RESPONSE_BYTES, then cut off,
 * and whatever happens to it after its status came (too long, too slow, the connection lost)
 * does not undo the delivery.
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
      // postStream hands a 2xx answer's body over as it arrives (so it can be cut off at the cap
      // instead of refused); any other answer it reads whole, capped, as postJson does.
      const res = await this.transport.postStream(
        url,
        { accept: 'application/json', ...headers },
        envelope,
        timeoutMs,
      );
      if (!res.ok) return { status: res.status };
      await drain(res.chunks);
      return { status: res.status };
    } catch (err) {
      return { status: null, error: reasonOf(err, timeoutMs) };
    }
  }

  close(): Promise<void> {
    return this.transport.close();
  }
}
