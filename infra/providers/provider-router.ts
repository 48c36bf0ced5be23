import type {
  CompletionRequest,
  CompletionResult,
  Provider,
  ProviderClient,
  StreamDelta,
} from '../../domain/providers';
import { AnswerScrubber } from './answer-secrets';
import { AnthropicMessages } from './anthropic-messages';
import { HttpTransport } from './http-transport';
import { MockProvider } from './mock-provider';
import { OpenAiChat } from './openai-chat';
import type { Metrics } from '../metrics/metrics';
import { inSpan } from '../telemetry';

/** Scrubbers kept for the secrets used lately: making one costs about 45 µs, using one about 1. */
const SCRUBBERS_KEPT = 64;

/** Every adapter behind the one port, chosen by the credential's provider. One per process. */
export class ProviderRouter implements ProviderClient {
  private readonly transport: HttpTransport;
  private readonly clients: Record<Provider, ProviderClient>;

  private readonly metrics: Pick<Metrics, 'timeProviderCall'> | undefined;
  private readonly scrubbers = new Map<string, AnswerScrubber>();

  constructor(options: {
    allowPrivateHosts: boolean;
    maxResponseBytes?: number;
    /** Times every call by provider and counts its failures. */
    metrics?: Pick<Metrics, 'timeProviderCall'>;
  }) {
    this.metrics = options.metrics;
    this.transport = new HttpTransport(options);
    this.clients = {
      openai: new OpenAiChat(this.transport, 'openai'),
      openai_compatible: new OpenAiChat(this.transport, 'openai_compatible'),
      anthropic: new AnthropicMessages(this.transport),
      mock: new MockProvider(),
    };
  }

  /** A client span per call, under the caller's trace; its context travels in the request headers. */
  async complete(request: CompletionRequest): Promise<CompletionResult> {
    const client = this.clients[request.provider];
    const result = await this.timed(request, () => {
      if (!request.trace) return client.complete(request);
      return inSpan(
        'provider.complete',
        'client',
        request.trace,
        (span) => client.complete({ ...request, trace: span.carrier }),
        { 'gen_ai.system': request.provider, 'gen_ai.request.model': request.model },
      );
    });
    return this.scrubberFor(request)?.result(result) ?? result;
  }

  /** The same for a streamed call: one client span over the whole stream. */
  async stream(request: CompletionRequest, onDelta: (delta: StreamDelta) => void): Promise<CompletionResult> {
    const client = this.clients[request.provider];
    const scrubber = this.scrubberFor(request);
    const scrub = scrubber?.stream() ?? null;
    const pieces = scrub
      ? (d: StreamDelta) => {
          const sent = scrub.delta(d);
          if (sent) onDelta(sent);
        }
      : onDelta;
    const result = await this.timed(request, () => {
      if (!request.trace) return client.stream(request, pieces);
      return inSpan(
        'provider.stream',
        'client',
        request.trace,
        (span) => client.stream({ ...request, trace: span.carrier }, pieces),
        { 'gen_ai.system': request.provider, 'gen_ai.request.model': request.model },
      );
    });
    const held = scrub?.flush();
    if (held) onDelta(held);
    return scrubber?.result(result) ?? result;
  }

  private timed(
    request: CompletionRequest,
    call: () => Promise<CompletionResult>,
  ): Promise<CompletionResult> {
    return this.metrics ? this.metrics.timeProviderCall(request.provider, call) : call();
  }

  /** The mock is sent no secret; every other provider's answer is cleared of the one it was sent. */
  private scrubberFor(request: CompletionRequest): AnswerScrubber | null {
    if (request.provider === 'mock') return null;
    let scrubber = this.scrubbers.get(request.secret);
    if (!scrubber) {
      const oldest = this.scrubbers.keys().next();
      if (this.scrubbers.size >= SCRUBBERS_KEPT && !oldest.done) this.scrubbers.delete(oldest.value);
      scrubber = new AnswerScrubber(request.secret);
      this.scrubbers.set(request.secret, scrubber);
    }
    return scrubber;
  }

  close(): Promise<void> {
    return this.transport.close();
  }
}
