import fc from 'fast-check';
import type { StreamDelta } from '../../domain/providers';
import { StorablePieces } from '../../domain/invocations/storable-pieces';
import { storableText } from '../../domain/storable-text';

/** Streams `pieces` through StorablePieces and joins what it sends: content, and tool call 0's parts. */
function streamed(pieces: StreamDelta[]) {
  const sent: StreamDelta[] = [];
  const storable = new StorablePieces((d) => sent.push(d));
  pieces.forEach((p) => storable.add(p));
  storable.close();
  const call = { id: '', name: '', arguments: '' };
  for (const d of sent)
    for (const c of d.toolCalls ?? []) {
      call.id += c.id ?? '';
      call.name += c.name ?? '';
      call.arguments += c.arguments ?? '';
    }
  return { content: sent.map((d) => d.content ?? '').join(''), call, sent };
}

it('sends NUL and lone surrogates as U+FFFD, in content, tool call ids, names and arguments', () => {
  const { content, call } = streamed([
    { content: 'a\u0000b\ud800' },
    { content: 'c' },
    { toolCalls: [{ index: 0, id: 'c\u0000', name: 'f\udc00', arguments: '{"a":"\u0000' }] },
    { toolCalls: [{ index: 0, arguments: '"}' }] },
  ]);
  expect(content).toBe('a\ufffdb\ufffdc');
  expect(call).toEqual({ id: 'c\ufffd', name: 'f\ufffd', arguments: '{"a":"\ufffd"}' });
});

it('keeps a surrogate pair split between two pieces whole, and sends a lone high one left at the end', () => {
  expect(streamed([{ content: 'x\ud83d' }, { content: '\ude00y' }]).content).toBe('x\u{1f600}y');
  const args = streamed([
    { toolCalls: [{ index: 0, arguments: '"\ud83d' }] },
    { toolCalls: [{ index: 0, arguments: '\ude00"' }] },
  ]);
  expect(args.call.arguments).toBe('"\u{1f600}"');
  const { content, sent } = streamed([{ content: 'end\ud83d' }]);
  expect(content).toBe('end\ufffd');
  expect(sent.every((d) => d.content !== '')).toBe(true);
});

it('streams, however the text is cut into pieces, what storableText makes of the whole', () => {
  const units = fc.constantFrom('a', '\u0000', '\ud83d', '\ude00', '\ud83d\ude00', 'é');
  fc.assert(
    fc.property(fc.array(fc.array(units, { maxLength: 6 }), { maxLength: 8 }), (parts) => {
      const pieces = parts.map((p) => p.join(''));
      const whole = pieces.join('');
      expect(streamed(pieces.map((content) => ({ content }))).content).toBe(storableText(whole));
      const args = pieces.map((a) => ({ toolCalls: [{ index: 0, arguments: a }] }));
      expect(streamed(args).call.arguments).toBe(storableText(whole));
    }),
    { numRuns: 1000 },
  );
});
