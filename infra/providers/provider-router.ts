import type {
  CompletionRequest,
  CompletionResult,
  Provider,
  ProviderClient,
  StreamDelta,
} from '../../domain/providers';
import { AnthropicMessages } from './anthropic-messages';
import { HttpTransport } from './http-transport';
import { MockProvider } from './mock-provider';
import { OpenAiChat } from './openai-chat';
import type { Metrics } from '../metrics/metrics';
import { inSpan } from '../telemetry';

/** Every adapter behind the one port, chosen by the credential's provider. One per process. */
export class ProviderRouter implements ProviderClient {
  private readonly transport: HttpTransport;
  private readonly clients: Record<Provider, ProviderClient>;

  private readonly metrics: Pick<Metrics, 'timeProviderCall'> | undefined;

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
  complete(request: CompletionRequest): Promise<CompletionResult> {
    const client = this.clients[request.provider];
    return this.timed(request, () => {
      if (!request.trace) return client.complete(request);
      return inSpan(
        'provider.complete',
        'client',
        request.trace,
        (span) => client.complete({ ...request, trace: span.carrier }),
        { 'gen_ai.system': request.provider, 'gen_ai.request.model': request.model },
      );
    });
  }

  /** The same for a streamed call: one client span over the whole stream. */
  stream(request: CompletionRequest, onDelta: (delta: StreamDelta) => void): Promise<CompletionResult> {
    const client = this.clients[request.provider];
    return this.timed(request, () => {
      if (!request.trace) return client.stream(request, onDelta);
      return inSpan(
        'provider.stream',
        'client',
        request.trace,
        (span) => client.stream({ ...request, trace: span.carrier }, onDelta),
        { 'gen_ai.system': request.provider, 'gen_ai.request.model': request.model },
      );
    });
  }

  private timed(
    request: CompletionRequest,
    call: () => Promise<CompletionResult>,
  ): Promise<CompletionResult> {
    return this.metrics ? this.metrics.timeProviderCall(request.provider, call) : call();
  }

  close(): Promise<void> {
    return this.transport.close();
  }
}
