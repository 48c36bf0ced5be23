import type { CompletionRequest, CompletionResult, Provider, ProviderClient } from '../../domain/providers';
import { AnthropicMessages } from './anthropic-messages';
import { HttpTransport } from './http-transport';
import { MockProvider } from './mock-provider';
import { OpenAiChat } from './openai-chat';

/** Every adapter behind the one port, chosen by the credential's provider. One per process. */
export class ProviderRouter implements ProviderClient {
  private readonly transport: HttpTransport;
  private readonly clients: Record<Provider, ProviderClient>;

  constructor(options: { allowPrivateHosts: boolean; maxResponseBytes?: number }) {
    this.transport = new HttpTransport(options);
    this.clients = {
      openai: new OpenAiChat(this.transport, 'openai'),
      openai_compatible: new OpenAiChat(this.transport, 'openai_compatible'),
      anthropic: new AnthropicMessages(this.transport),
      mock: new MockProvider(),
    };
  }

  complete(request: CompletionRequest): Promise<CompletionResult> {
    return this.clients[request.provider].complete(request);
  }

  close(): Promise<void> {
    return this.transport.close();
  }
}
