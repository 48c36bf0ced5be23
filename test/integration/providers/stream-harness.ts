import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type {
  CompletionRequest,
  ProviderClient,
  ProviderError,
  StreamDelta,
} from '../../../domain/providers';

/** One server-sent event as a provider writes it: JSON (or `[DONE]`), optionally named. */
export type SseEvent = unknown | { event: string; data: unknown };

const named = (e: SseEvent): e is { event: string; data: unknown } =>
  typeof e === 'object' && e !== null && 'event' in e && 'data' in e;

export function sseText(e: SseEvent): string {
  const data = named(e) ? e.data : e;
  const line = `data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
  return named(e) ? `event: ${e.event}\n${line}` : line;
}

export const openStream = (res: ServerResponse) =>
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });

/** Answers a stream: every event at once, then (unless told otherwise) the end of the body. */
export function sse(res: ServerResponse, events: SseEvent[], end = true): void {
  openStream(res);
  for (const e of events) res.write(sseText(e));
  if (end) res.end();
}

/**
 * A stub handler whose connection drops mid-stream: the events, then (30 ms later) the socket is
 * destroyed without the body's end.
 */
export const sseThenDrop =
  (events: SseEvent[], afterMs = 30) =>
  (_req: unknown, res: ServerResponse): void => {
    sse(res, events, false);
    setTimeout(() => res.destroy(), afterMs);
  };

/** Writes the stream in small pieces with pauses, so lines and events straddle network reads. */
export async function sseInPieces(res: ServerResponse, events: SseEvent[], size = 7, gapMs = 2) {
  openStream(res);
  const text = events.map(sseText).join('');
  for (let i = 0; i < text.length; i += size) {
    res.write(text.slice(i, i + size));
    await sleep(gapMs);
  }
  res.end();
}

/** A streamed call's pieces and its outcome, whichever way it ended. */
export async function collect(client: ProviderClient, req: CompletionRequest) {
  const pieces: StreamDelta[] = [];
  const outcome = await client
    .stream(req, (d) => pieces.push(d))
    .then(
      (result) => ({ result, error: null }),
      (error: unknown) => ({ result: null, error: error as ProviderError }),
    );
  return { pieces, ...outcome };
}

export const textOf = (pieces: StreamDelta[]) => pieces.map((p) => p.content ?? '').join('');
