import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: unknown;
  /** The client's port: two requests with the same one came over one TCP connection. */
  remotePort: number | undefined;
}

export type StubHandler = (req: RecordedRequest, res: ServerResponse) => void;

/** Answers a plain Chat Completions call with `content`, 5 prompt tokens and 1 completion token. */
export function answerChat(res: ServerResponse, content: string, model = 'stub-model'): void {
  res.writeHead(200, { 'content-type': 'application/json' }).end(
    JSON.stringify({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: 1,
      model,
      choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 5, completion_tokens: 1 },
    }),
  );
}

/** A local HTTP server standing in for a provider: records what it was sent, answers as told. */
export class StubProvider {
  readonly requests: RecordedRequest[] = [];
  handler: StubHandler = (_req, res) => res.writeHead(500).end();
  private server: Server | null = null;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const recorded = {
          method: req.method ?? '',
          path: req.url ?? '',
          headers: req.headers,
          body: parse(text),
          remotePort: req.socket.remotePort,
        };
        this.requests.push(recorded);
        this.handler(recorded, res);
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** Answer JSON with a status (and headers) from now on. */
  answer(status: number, body: unknown, headers: Record<string, string> = {}): void {
    this.handler = (_req, res) =>
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};
