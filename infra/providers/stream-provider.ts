import {
  ProviderError,
  toolCallPieces,
  type CompletionRequest,
  type CompletionResult,
  type StreamDelta,
} from '../../domain/providers';
import { gatherCapped, type HttpTransport } from './http-transport';
import {
  badResponse,
  errorFromStatus,
  providerMessage,
  scrubError,
  scrubSecret,
  timeoutError,
} from './provider-errors';
import { sseData } from './sse-events';

/**
 * How an adapter reads a streamed call's answer: its event stream, or the whole JSON answer a
 * gateway that ignores `stream` sends instead (the adapter's own reading of a plain call).
 */
export interface AnswerReaders {
  events: (onDelta: OnDelta) => StreamParser;
  whole: (json: object) => CompletionResult;
}

/** What an adapter makes of a provider's event stream: pieces as they come, the whole at the end. */
export interface StreamParser {
  /** One event's data; true once the provider said it is done. */
  event(data: string): boolean;
  /** The text that has arrived so far. */
  readonly content: string;
  /** The names and arguments of the tool calls that have arrived so far (output the provider bills). */
  readonly toolCallText: string;
  /** The usage the provider reported for the whole call so far, if any (never a partial count). */
  readonly usage: CompletionResult['usage'] | null;
  /** The whole answer; throws when the stream ended without what an answer needs. */
  result(): CompletionResult;
}

/** What the model wrote into tool calls so far: each call's name and arguments, run together. */
export const toolCallTextOf = (calls: Iterable<{ name: string; arguments: string }>): string =>
  [...calls].map((c) => c.name + c.arguments).join('');

const aborted = () =>
  new ProviderError('final', 'provider_aborted', 'the client hung up; the call was stopped');
const notAStream = () =>
  badResponse(
    'a 2xx answer that is neither server-sent events nor a JSON completion (does this provider, or a gateway in front of it, support stream: true?)',
  );
const connectionLost = () =>
  new ProviderError('retryable', 'provider_connection_lost', 'the stream from the provider broke');

/**
 * A failure after the request was sent: the provider may bill it, and what arrived is kept. Our
 * deadline and our caller's abort explain whatever error they caused; other errors keep their code.
 */
function broken(
  err: unknown,
  parser: StreamParser,
  req: CompletionRequest,
  timedOut: boolean,
): ProviderError {
  const base = timedOut
    ? timeoutError(req.timeoutMs)
    : req.signal?.aborted
      ? aborted()
      : err instanceof ProviderError
        ? err
        : connectionLost();
  return new ProviderError(
    base.kind,
    base.code,
    scrubSecret(base.message, req.secret),
    base.status,
    base.retryAfterSeconds,
    'unknown',
    { content: parser.content, toolCallText: parser.toolCallText, usage: parser.usage },
  );
}

type OnDelta = (delta: StreamDelta) => void;

const deltaLength = (d: StreamDelta): number =>
  (d.content?.length ?? 0) +
  (d.toolCalls ?? []).reduce(
    (n, t) => n + (t.id?.length ?? 0) + (t.name?.length ?? 0) + (t.arguments?.length ?? 0),
    0,
  );

/**
 * Hands the pieces on while the answer they add up to stays within `max` characters; past it the
 * stream ends as a bad response. Every string a parser keeps came in a piece, so this bounds what
 * it holds, however many events the answer took.
 */
function metered(onDelta: OnDelta, max: number): OnDelta {
  let length = 0;
  return (delta) => {
    length += deltaLength(delta);
    if (length > max) throw badResponse(`the answer ran past ${max} characters`);
    onDelta(delta);
  };
}

const OPEN_BRACE = 0x7b;

const isBlank = (byte: number): boolean => byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;

/**
 * The body's chunks up to its first byte that is not white space, and that byte (undefined for a
 * body of white space alone). An event stream starts with a field or a comment, never `{`; a whole
 * JSON answer does. Told by the body, not by its media type: gateways label both wrongly.
 */
async function firstByte(
  chunks: AsyncIterator<Buffer>,
): Promise<{ head: Buffer[]; byte: number | undefined; ended: boolean }> {
  const head: Buffer[] = [];
  for (;;) {
    const next = await chunks.next();
    if (next.done) return { head, byte: undefined, ended: true };
    head.push(next.value);
    const byte = next.value.find((b) => !isBlank(b));
    if (byte !== undefined) return { head, byte, ended: false };
  }
}

/** The chunks read ahead, then the rest; a reader that stops early closes the rest (the body). */
async function* joined(head: Buffer[], rest: AsyncIterator<Buffer>, ended: boolean): AsyncGenerator<Buffer> {
  let done = ended;
  try {
    yield* head;
    for (let next = done ? null : await rest.next(); next && !next.done; next = await rest.next())
      yield next.value;
    done = true;
  } finally {
    if (!done) await rest.return?.();
  }
}

const parsedObject = (text: string): object | null => {
  try {
    const json: unknown = JSON.parse(text);
    return json !== null && typeof json === 'object' ? json : null;
  } catch {
    return null;
  }
};

/** A whole answer as the one piece a stream would have been made of. */
const deltaOf = ({ output }: CompletionResult): StreamDelta => ({
  ...(output.content ? { content: output.content } : {}),
  ...(output.toolCalls?.length ? { toolCalls: toolCallPieces(output.toolCalls) } : {}),
});

/**
 * A JSON object answering a streamed call (a gateway that ignores `stream`): read as the plain
 * call's answer and handed on as one piece. One that cannot be read is a bad response, delivered.
 */
async function wholeAnswer(
  chunks: AsyncIterable<Buffer>,
  whole: AnswerReaders['whole'],
  pieces: OnDelta,
  max: number,
): Promise<CompletionResult> {
  const json = parsedObject(await gatherCapped(chunks, max));
  if (!json) throw notAStream();
  const result = whole(json);
  const delta = deltaOf(result);
  if (delta.content !== undefined || delta.toolCalls) pieces(delta);
  return result;
}

/**
 * Posts a streamed provider request and feeds its events to the parser the adapter makes (or, for
 * a JSON answer, reads it whole). A non-2xx answer is the same classified error a plain call gives;
 * a stream that breaks, times out or is aborted after the request was sent, or whose answer runs
 * past the transport's cap, rejects with delivery `unknown` and what had arrived (`streamed`).
 */
export async function streamProvider(
  transport: HttpTransport,
  req: CompletionRequest,
  url: string,
  headers: Record<string, string>,
  body: unknown,
  answer: AnswerReaders,
  onDelta: OnDelta,
): Promise<CompletionResult> {
  const pieces = metered(onDelta, transport.maxBytes);
  const parser = answer.events(pieces);
  const res = await transport
    .postStream(url, { ...req.trace, ...headers }, body, req.timeoutMs, req.signal)
    .catch((err: unknown) => {
      // Sent, then no answer (timeout, abort, reset): nothing arrived, but the call may be billed.
      if (err instanceof ProviderError && err.delivery === 'unknown')
        throw broken(err, parser, req, err.code === 'provider_timeout');
      throw scrubError(err, req.secret);
    });
  if (!res.ok)
    throw errorFromStatus(
      res.status,
      scrubSecret(providerMessage(res.json, res.text), req.secret),
      res.retryAfter,
    );
  const chunks = res.chunks[Symbol.asyncIterator]();
  const first = await firstByte(chunks).catch((err: unknown) => {
    throw broken(err, parser, req, res.deadline.aborted);
  });
  const read = joined(first.head, chunks, first.ended);
  if (first.byte === OPEN_BRACE)
    return wholeAnswer(read, answer.whole, pieces, transport.maxBytes).catch((err: unknown) => {
      throw broken(err, parser, req, res.deadline.aborted);
    });
  let finished = false;
  let anyEvent = false;
  try {
    for await (const data of sseData(read, transport.maxBytes)) {
      anyEvent = true;
      if ((finished = parser.event(data))) break;
    }
  } catch (err) {
    throw broken(err, parser, req, res.deadline.aborted);
  }
  // A whole 2xx body without one event (an HTML page) is an answer that cannot be read, not a
  // lost connection: asking again would be billed again for the same answer.
  if (!anyEvent && !res.signal.aborted) throw broken(notAStream(), parser, req, false);
  // A body that ended before the provider's end marker was cut off on the way, unless the usage
  // (which comes last) had arrived: some compatible servers never send the marker.
  if (!finished && (parser.usage === null || res.signal.aborted))
    throw broken(null, parser, req, res.deadline.aborted);
  try {
    return parser.result();
  } catch (err) {
    throw broken(err, parser, req, false);
  }
}
