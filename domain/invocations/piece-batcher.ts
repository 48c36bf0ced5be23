import type { StreamDelta } from '../providers';

/** How long the pieces after a sent one gather before they go out together. */
export const PIECE_GATHER_MS = 20;
/** Text (content and tool-call arguments) gathered past this goes out at once, whatever the time. */
const MAX_GATHERED_CHARS = 16 * 1024;

type ToolPiece = NonNullable<StreamDelta['toolCalls']>[number];

/** A tool call's pieces joined: its id and name as first given, its argument fragments in order. */
function joinTools(into: ToolPiece[], more: ToolPiece[]): ToolPiece[] {
  const calls = into.map((c) => ({ ...c }));
  for (const piece of more) {
    const call = calls.find((c) => c.index === piece.index);
    if (!call) calls.push({ ...piece });
    else {
      if (call.id === undefined && piece.id !== undefined) call.id = piece.id;
      if (call.name === undefined && piece.name !== undefined) call.name = piece.name;
      if (piece.arguments) call.arguments = (call.arguments ?? '') + piece.arguments;
    }
  }
  return calls;
}

/** The text a piece carries: its content and its tool calls' arguments. */
const sizeOf = (d: StreamDelta): number =>
  (d.content?.length ?? 0) + (d.toolCalls ?? []).reduce((n, c) => n + (c.arguments?.length ?? 0), 0);

/** Two pieces as one: what a client assembles from the pair is what it assembles from the join. */
export function joinPieces(a: StreamDelta, b: StreamDelta): StreamDelta {
  const content = (a.content ?? '') + (b.content ?? '');
  const toolCalls = joinTools(a.toolCalls ?? [], b.toolCalls ?? []);
  return { ...(content ? { content } : {}), ...(toolCalls.length ? { toolCalls } : {}) };
}

/**
 * Sends a stream's pieces on to its client at most once every PIECE_GATHER_MS: the first piece at
 * once, the ones after it gathered and joined. A provider that streams a token a piece keeps its
 * pace; one that sends a hundred thousand one-letter pieces (each a message through Redis and an
 * event to the client, each many times its letter) sends a few hundred, and the memory they take
 * on the way stays bounded. `close` sends what is left: call it before the stream's end is told.
 */
export class PieceBatcher {
  private gathered: StreamDelta | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly send: (delta: StreamDelta) => void,
    private readonly gatherMs = PIECE_GATHER_MS,
  ) {}

  add(delta: StreamDelta): void {
    this.gathered = this.gathered ? joinPieces(this.gathered, delta) : delta;
    if (!this.timer) this.sendNow();
    else if (sizeOf(this.gathered) >= MAX_GATHERED_CHARS) this.sendGathered();
  }

  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.sendGathered();
  }

  /** Sends what gathered and holds the next pieces for gatherMs; with nothing gathered, stops. */
  private sendNow(): void {
    if (!this.sendGathered()) return void (this.timer = null);
    this.timer = setTimeout(() => this.sendNow(), this.gatherMs);
  }

  private sendGathered(): boolean {
    const delta = this.gathered;
    this.gathered = null;
    if (delta) this.send(delta);
    return delta !== null;
  }
}
