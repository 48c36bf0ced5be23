import { badResponse } from './provider-errors';

/**
 * The `data:` payloads of a server-sent event stream, one per event, as they arrive. Lines (and
 * a character's UTF-8 bytes) may be split across chunks; an event may span several `data:` lines
 * (joined with newlines). An event, or a line still unfinished, longer than `maxEvent` characters
 * ends the stream as a bad response: it would all be held.
 */
export async function* sseData(body: AsyncIterable<Buffer>, maxEvent: number): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8');
  let buffer = '';
  let data: string[] = [];
  let held = 0;
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let newline = buffer.indexOf('\n');
    while (newline >= 0) {
      const line = buffer.slice(0, newline).replace(/\r$/, '');
      buffer = buffer.slice(newline + 1);
      if (line === '') {
        if (data.length) yield data.join('\n');
        data = [];
        held = 0;
      } else if (line.startsWith('data:')) {
        data.push(line.slice(5).replace(/^ /, ''));
        held += line.length;
      }
      newline = buffer.indexOf('\n');
    }
    if (held + buffer.length > maxEvent)
      throw badResponse(`a stream event longer than ${maxEvent} characters`);
  }
  if (data.length) yield data.join('\n');
}

/** Parses one event's JSON; an unreadable event is null (the caller decides what that means). */
export const eventJson = (data: string): Record<string, unknown> | null => {
  try {
    const parsed: unknown = JSON.parse(data);
    return parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : null;
  } catch {
    return null;
  }
};
