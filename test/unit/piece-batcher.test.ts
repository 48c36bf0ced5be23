import { joinPieces, PieceBatcher, PIECE_GATHER_MS } from '../../domain/invocations/piece-batcher';
import type { StreamDelta } from '../../domain/providers';

describe('joinPieces', () => {
  it('runs text together and joins a tool call by index: its id and name once, its arguments in order', () => {
    const joined = [
      { content: 'Hel' },
      { content: 'lo', toolCalls: [{ index: 0, id: 'call_1', name: 'shell' }] },
      {
        toolCalls: [
          { index: 0, arguments: '{"cmd":' },
          { index: 1, id: 'call_2', name: 'ls' },
        ],
      },
      { toolCalls: [{ index: 0, arguments: '"pwd"}' }] },
    ].reduce<StreamDelta>((a, b) => joinPieces(a, b), {});
    expect(joined).toEqual({
      content: 'Hello',
      toolCalls: [
        { index: 0, id: 'call_1', name: 'shell', arguments: '{"cmd":"pwd"}' },
        { index: 1, id: 'call_2', name: 'ls' },
      ],
    });
  });
});

describe('PieceBatcher', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('sends the first piece at once, gathers the next ones for a window, and close sends what is left', () => {
    const sent: StreamDelta[] = [];
    const batcher = new PieceBatcher((d) => sent.push(d));
    batcher.add({ content: 'a' });
    expect(sent).toEqual([{ content: 'a' }]);
    batcher.add({ content: 'b' });
    batcher.add({ content: 'c' });
    expect(sent).toHaveLength(1);
    jest.advanceTimersByTime(PIECE_GATHER_MS);
    expect(sent).toEqual([{ content: 'a' }, { content: 'bc' }]);
    // A quiet window stops the timer: the next piece goes at once again.
    jest.advanceTimersByTime(PIECE_GATHER_MS);
    batcher.add({ content: 'd' });
    expect(sent.at(-1)).toEqual({ content: 'd' });
    batcher.add({ content: 'e' });
    batcher.close();
    expect(sent.map((d) => d.content).join('')).toBe('abcde');
    jest.advanceTimersByTime(10 * PIECE_GATHER_MS);
    expect(sent).toHaveLength(4);
  });

  it('sends gathered text past 16 KiB without waiting for the window', () => {
    const sent: StreamDelta[] = [];
    const batcher = new PieceBatcher((d) => sent.push(d));
    batcher.add({ content: 'x' });
    for (let i = 0; i < 17; i++) batcher.add({ content: 'y'.repeat(1024) });
    expect(sent).toHaveLength(2);
    expect(sent[1]?.content?.length).toBeGreaterThanOrEqual(16 * 1024);
    batcher.close();
  });
});
