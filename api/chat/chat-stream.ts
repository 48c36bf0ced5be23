import { PassThrough } from 'node:stream';
import type { InvocationSummary } from '../../domain/invocations/invocation';
import type { CompletionWaiter, PieceFollower } from '../../domain/invocations/signals';
import { toolCallPieces, type StreamDelta } from '../../domain/providers';
import type { Reply } from '../http/route';
import { createdOf, finishReasonOf, refusalOf, usageOf } from './chat-replies';

/** How the route runs the invocation, with the waiter the stream hands it (see streamCompletion). */
export type RunWith = (waiter: CompletionWaiter) => Promise<InvocationSummary>;

export interface StreamDeps extends PieceFollower {
  /** The invocation as it is now (to tell a paused one from a slow one). */
  read(id: string): Promise<InvocationSummary | null>;
  /** How long a request may wait before its stream starts (CP_MAX_WAIT_SECONDS). */
  maxWaitMs: number;
  /** How long a started stream may take in all. */
  streamMs: number;
  includeUsage: boolean;
  /** The model the request names; null when it resumes an invocation (its model is read). */
  model: string | null;
  /** Quoted in an error the stream ends with. */
  requestId: string;
  /** Aborts when the client hangs up. */
  closed: AbortSignal;
  onError(err: unknown): void;
}

const SSE_HEADERS = {
  'Content-Type': 'text/event-stream; charset=utf-8',
  'Cache-Control': 'no-store, no-transform',
  'X-Accel-Buffering': 'no',
};

/**
 * Events a client has not read past this are not kept for it: the stream is ended and the call
 * stopped, as if it hung up (a client that stops reading holds memory for as long as it likes).
 * Half the largest answer a provider may send (8 MiB), so that a client that never reads is cut.
 */
export const MAX_UNREAD_BYTES = 4 * 1024 * 1024;

/** Writes `chat.completion.chunk` events of one invocation, keeping what it sent to reconcile at the end. */
export class ChunkWriter {
  readonly out = new PassThrough();
  private sentText = '';
  private sentTools = false;
  private roleSent = false;

  constructor(
    private readonly meta: { id: string; model: string; created: number },
    private readonly onUnread: () => void,
  ) {}

  piece(delta: StreamDelta): void {
    // What waits from before this piece is what its client has not read, however large this one
    // is: a whole answer may come as one piece, and the events that end it follow at once.
    if (this.unread() > MAX_UNREAD_BYTES) return this.onUnread();
    const wire: Record<string, unknown> = this.roleSent ? {} : { role: 'assistant' };
    this.roleSent = true;
    if (delta.content) {
      wire.content = delta.content;
      this.sentText += delta.content;
    }
    if (delta.toolCalls?.length) {
      this.sentTools = true;
      wire.tool_calls = delta.toolCalls.map((t) => ({
        index: t.index,
        ...(t.id ? { id: t.id, type: 'function' } : {}),
        function: { ...(t.name ? { name: t.name } : {}), ...(t.arguments ? { arguments: t.arguments } : {}) },
      }));
    }
    this.chunk([{ index: 0, delta: wire, finish_reason: null }]);
  }

  /** The rest of the answer that no piece carried (a piece lost in transit), then the end. */
  finish(invocation: InvocationSummary, includeUsage: boolean): void {
    const output = invocation.output;
    const content = output?.content ?? '';
    const rest = content.startsWith(this.sentText) ? content.slice(this.sentText.length) : '';
    const tools = !this.sentTools && output?.toolCalls?.length ? output.toolCalls : [];
    if (rest || tools.length || !this.roleSent)
      this.piece({
        ...(rest ? { content: rest } : {}),
        toolCalls: toolCallPieces(tools),
      });
    this.chunk([{ index: 0, delta: {}, finish_reason: finishReasonOf(invocation) }]);
    if (includeUsage) this.chunk([], usageOf(invocation));
    this.done();
  }

  /** An error after the stream started: OpenAI's SDKs raise an `error` event as an APIError. */
  fail(reply: Reply): void {
    this.out.write(`data: ${JSON.stringify(reply.body)}\n\n`);
    this.done();
  }

  private done(): void {
    this.out.end('data: [DONE]\n\n');
  }

  private chunk(choices: unknown[], usage?: unknown): void {
    const { id, model, created } = this.meta;
    const event = {
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      choices,
      ...(usage ? { usage } : {}),
    };
    this.out.write(`data: ${JSON.stringify(event)}\n\n`);
  }

  /**
   * The bytes written and not yet read. A write the full readable side holds back is counted on
   * both sides until it passes, so the larger side, not the sum.
   */
  private unread(): number {
    return Math.max(this.out.writableLength, this.out.readableLength);
  }
}

/**
 * A streamed chat completion. The answer's status is decided by the first thing that happens:
 * a piece (200 and the event stream from then on), or the invocation ending first (a refusal is a
 * plain error answer; a success without pieces is streamed whole). A request still waiting for
 * people when the wait runs out answers approval_pending. A client that hangs up stops the
 * provider call through the worker, or keeps it from being made if it has not begun, unless it
 * waits for people (its client may come back for it). A request resumed with X-Invocation-Id only
 * watches: its hang-up stops nothing, and if pieces had gone out when it came it gets the answer
 * whole at the end (the pieces are not kept to send again).
 */
export async function streamCompletion(deps: StreamDeps, run: RunWith): Promise<Reply> {
  const resumed = deps.model === null;
  let id = '';
  let writer: ChunkWriter | null = null;
  const early: StreamDelta[] = [];
  let first: () => void = () => undefined;
  const started = new Promise<'piece'>((resolve) => (first = () => resolve('piece')));
  let following: { cancel(): void } | null = null;
  let pieces: 'hold' | 'pass' | 'drop' = resumed ? 'hold' : 'pass';
  const onPiece = (d: StreamDelta) => {
    if (pieces === 'drop') return;
    if (writer) return writer.piece(d);
    early.push(d);
    if (pieces === 'pass') first();
  };
  let stopped = false;
  const hangUp = () => {
    writer?.out.destroy();
    if (resumed || !id || stopped) return;
    stopped = true;
    void stopCall(deps, id).catch(deps.onError);
  };
  deps.closed.addEventListener('abort', hangUp, { once: true });
  const done = run({
    wait: (invocationId, ms) => {
      id = invocationId;
      const f = deps.follow(invocationId, onPiece, ms);
      following = f;
      if (deps.closed.aborted) hangUp(); // it hung up while the invocation was being made
      if (resumed)
        void noPieceOutYet(deps, invocationId).then((pass) => {
          pieces = pass ? 'pass' : 'drop';
          if (!pass) early.length = 0;
          else if (early.length > 0) first();
        });
      return f;
    },
  });
  void done.finally(() => deps.closed.removeEventListener('abort', hangUp)).catch(() => undefined);
  const paused = setTimeout(
    () =>
      void stopIfPaused(
        deps,
        () => id,
        () => writer,
        () => following,
      ),
    deps.maxWaitMs,
  );
  try {
    const winner = await Promise.race([started, done.then(() => 'done' as const)]);
    const invocation = winner === 'done' ? await done : null;
    if (invocation && invocation.status !== 'succeeded') return refusalOf(invocation, deps.requestId);
    const model = await modelOf(deps, id, invocation);
    const created = invocation ? createdOf(invocation) : Math.floor(Date.now() / 1000);
    writer = new ChunkWriter({ id, model, created }, hangUp);
    for (const d of early) writer.piece(d);
    finishLater(deps, writer, done);
    return { status: 200, body: writer.out, headers: { ...SSE_HEADERS, 'X-Invocation-Id': id } };
  } finally {
    clearTimeout(paused);
  }
}

/**
 * Whether a resumed request may stream pieces: only if none had gone out when it joined (it
 * follows them from before this read, and the worker marks the stream before its first piece).
 */
async function noPieceOutYet(deps: StreamDeps, id: string): Promise<boolean> {
  return !(await deps.begun(id).catch(() => true));
}

/**
 * Stops the call of a client that hung up, or keeps it from being made if it has not begun; one
 * waiting for people is left to them: its client may come back for it with X-Invocation-Id.
 */
async function stopCall(deps: StreamDeps, id: string): Promise<void> {
  const now = await deps.read(id).catch(() => null);
  await deps.abort(id, now?.status !== 'awaiting_approval');
}

/**
 * The model every chunk names: the finished invocation's, else the request's; a resumed request's
 * body may name another, so its invocation is read (pieces arriving meanwhile wait in `early`).
 */
async function modelOf(deps: StreamDeps, id: string, done: InvocationSummary | null): Promise<string> {
  if (done) return done.model;
  if (deps.model !== null) return deps.model;
  const invocation = await deps.read(id).catch(() => null);
  return invocation?.model ?? '';
}

/** At the end of the wait: a request still waiting for people stops waiting (approval_pending). */
async function stopIfPaused(
  deps: StreamDeps,
  id: () => string,
  writer: () => ChunkWriter | null,
  following: () => { cancel(): void } | null,
): Promise<void> {
  if (writer() || !id()) return;
  const now = await deps.read(id()).catch(() => null);
  if (now?.status === 'awaiting_approval') following()?.cancel();
}

function finishLater(deps: StreamDeps, writer: ChunkWriter, done: Promise<InvocationSummary>): void {
  done
    .then((invocation) => {
      if (invocation.status === 'succeeded') writer.finish(invocation, deps.includeUsage);
      else writer.fail(refusalOf(invocation, deps.requestId));
    })
    .catch((err: unknown) => {
      deps.onError(err);
      writer.out.destroy();
    });
}
