import { ChunkWriter, MAX_UNREAD_BYTES } from '../../api/chat/chat-stream';

/** A client that stops reading a stream is cut once MAX_UNREAD_BYTES wait for it. */
describe('ChunkWriter', () => {
  const piece = { content: 'x'.repeat(64 * 1024) };

  it('tells once the events its client has not read pass the limit, not before', () => {
    const unread = jest.fn();
    const writer = new ChunkWriter({ id: 'inv_1', model: 'm', created: 0 }, unread);
    const under = Math.floor(MAX_UNREAD_BYTES / (64 * 1024)) - 2;
    for (let i = 0; i < under; i++) writer.piece(piece);
    expect(unread).not.toHaveBeenCalled();
    for (let i = 0; i < 4; i++) writer.piece(piece);
    expect(unread).toHaveBeenCalled();
    writer.out.destroy();
  });

  it('does not tell for one large piece its client has not had the chance to read (a whole answer)', () => {
    const unread = jest.fn();
    const writer = new ChunkWriter({ id: 'inv_1', model: 'm', created: 0 }, unread);
    const content = 'y'.repeat(3 * 1024 * 1024);
    writer.piece({ content });
    writer.finish(
      {
        id: 'inv_1',
        status: 'succeeded',
        output: { role: 'assistant', content },
        usage: { inputTokens: 1, outputTokens: 1 },
      } as unknown as Parameters<ChunkWriter['finish']>[0],
      true,
    );
    expect(unread).not.toHaveBeenCalled();
    writer.out.destroy();
  });

  it('does not tell while its client reads', () => {
    const unread = jest.fn();
    const writer = new ChunkWriter({ id: 'inv_1', model: 'm', created: 0 }, unread);
    writer.out.on('data', () => undefined);
    for (let i = 0; i < (2 * MAX_UNREAD_BYTES) / (64 * 1024); i++) writer.piece(piece);
    expect(unread).not.toHaveBeenCalled();
    writer.out.destroy();
  });
});
