import type { StreamDelta } from '../providers';
import { storableText } from '../storable-text';

type ToolPiece = NonNullable<StreamDelta['toolCalls']>[number];

const HIGH_SURROGATE = /[\ud800-\udbff]$/;

/** The text to send now and a last high surrogate held back, whose low half may be in the next piece. */
function cut(text: string, closing: boolean): [string, string] {
  return !closing && HIGH_SURROGATE.test(text) ? [text.slice(0, -1), text.slice(-1)] : [text, ''];
}

/**
 * A stream's pieces as the answer is stored (storableText): each NUL and lone surrogate becomes
 * U+FFFD, so a client streaming the answer gets the text that was recorded, which it can send
 * back on its next turn (QA: a streamed tool call id holding a NUL was refused when sent back).
 * A surrogate pair split between two pieces is kept whole: the high half waits for the next one.
 */
export class StorablePieces {
  private heldContent = '';
  private readonly heldArguments = new Map<number, string>();

  constructor(private readonly send: (delta: StreamDelta) => void) {}

  add(delta: StreamDelta, closing = false): void {
    const [content, held] = cut(this.heldContent + (delta.content ?? ''), closing);
    this.heldContent = held;
    const toolCalls = (delta.toolCalls ?? []).map((c) => this.toolPiece(c, closing));
    const out: StreamDelta = {
      ...(content ? { content: storableText(content) } : {}),
      ...(toolCalls.length ? { toolCalls } : {}),
    };
    if (out.content !== undefined || out.toolCalls) this.send(out);
  }

  /** Sends what was held back (a lone high surrogate, as U+FFFD): call it before the stream's end is told. */
  close(): void {
    const toolCalls = [...this.heldArguments.keys()].map((index) => ({ index }));
    if (this.heldContent || toolCalls.length > 0) this.add({ toolCalls }, true);
  }

  private toolPiece(piece: ToolPiece, closing: boolean): ToolPiece {
    const [args, held] = cut((this.heldArguments.get(piece.index) ?? '') + (piece.arguments ?? ''), closing);
    if (held) this.heldArguments.set(piece.index, held);
    else this.heldArguments.delete(piece.index);
    return {
      index: piece.index,
      ...(piece.id !== undefined ? { id: storableText(piece.id) } : {}),
      ...(piece.name !== undefined ? { name: storableText(piece.name) } : {}),
      ...(args ? { arguments: storableText(args) } : {}),
    };
  }
}
