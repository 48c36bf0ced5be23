import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import type { Invocation, InvocationSummary } from '../../domain/invocations/invocation';
import type {
  CompletionSignal,
  CompletionWaiter,
  PieceFollower,
  PieceRelay,
  WaitResult,
} from '../../domain/invocations/signals';
import type { StreamDelta } from '../../domain/providers';
import type { Logger } from '../logger';

/** How long a stream's marks are kept: a hung-up client's for a queued call (queues drain well before). */
const MARK_MS = 60 * 60_000;

/** Larger invocations are announced by id only; waiters then read the row. */
const MAX_MESSAGE_BYTES = 64 * 1024;

interface Message {
  id: string;
  invocation?: InvocationSummary;
  /** A piece of a streamed answer; the finished message of the same invocation comes after it. */
  piece?: StreamDelta;
  /** The hub that sent a piece: it handed the piece to its own followers already. */
  from?: string;
}

type Listener = { settle: (result: WaitResult) => void; onPiece?: (delta: StreamDelta) => void };

const revive = (i: InvocationSummary): InvocationSummary => ({
  ...i,
  createdAt: new Date(i.createdAt),
  updatedAt: new Date(i.updatedAt),
  completedAt: i.completedAt ? new Date(i.completedAt) : null,
});

/**
 * `<id> <json>`: every API process receives every message, so the id comes first and the JSON is
 * parsed only where someone waits for that invocation. The request stays out: no answer shows it,
 * and the prompt is often most of an invocation's size.
 */
function encode(invocation: Invocation): string {
  const { request: _request, ...summary } = invocation;
  const full = JSON.stringify({ id: invocation.id, invocation: summary } satisfies Message);
  return `${invocation.id} ${Buffer.byteLength(full) <= MAX_MESSAGE_BYTES ? full : JSON.stringify({ id: invocation.id })}`;
}

/**
 * Finished invocations are published on one Redis channel; each API process holds one
 * subscription and a map from invocation id to its waiting requests. A thousand waiters cost a
 * thousand map entries and timers, not a thousand Redis listeners or poll loops. A lost message
 * (Redis restarting) costs only latency: a waiter whose wait runs out reads the row once.
 *
 * When the worker that finished an invocation runs in the process that waits for it (`--role
 * all`, as `npm start` runs), the waiters are answered in process at once, with the invocation
 * itself; the message is still published for every other process. Its echo finds no waiter here
 * (an answered waiter is forgotten), and the echo of a piece is skipped by its `from`.
 */
export class CompletionHub implements CompletionSignal, CompletionWaiter, PieceRelay, PieceFollower {
  private subscriber: Redis | null = null;
  private draining = false;
  private listening: Promise<void> | null = null;
  private readonly waiters = new Map<string, Set<Listener>>();
  /** Streams this (worker) process is running, to abort when their client hangs up. */
  private readonly streams = new Map<string, () => void>();
  private readonly channel: string;
  private readonly abortChannel: string;
  private readonly prefix: string;
  /** Names this hub in the pieces it publishes. */
  private readonly origin = randomBytes(6).toString('hex');
  /** How a piece this hub published ends (`from` is its last key): its echo is dropped unparsed. */
  private readonly ownPieceEnd = `,"from":"${this.origin}"}`;

  constructor(
    private readonly publisher: Redis,
    private readonly redisUrl: string,
    prefix: string,
    private readonly logger: Logger,
  ) {
    this.channel = `${prefix}:invocations:finished`;
    this.abortChannel = `${prefix}:invocations:abort`;
    this.prefix = prefix;
  }

  /**
   * A stream's marks: `hung-up`, its client hung up (for a worker that has not started the call
   * yet); `streamed`, pieces of its answer went out (a request resuming it has missed some).
   */
  private markKey(mark: 'hung-up' | 'streamed', invocationId: string): string {
    return `${this.prefix}:invocations:${mark}:${invocationId}`;
  }

  private async marked(mark: 'hung-up' | 'streamed', invocationId: string): Promise<boolean> {
    return (await this.publisher.exists(this.markKey(mark, invocationId))) === 1;
  }

  /**
   * Handed to this process's followers at once, and published on the finished channel from the
   * same connection as `finished`, so every piece reaches another process's API before the end of
   * its invocation. Not awaited: ioredis sends in order.
   */
  piece(invocationId: string, delta: StreamDelta): void {
    this.handPiece(this.waiters.get(invocationId), delta);
    const message = { id: invocationId, piece: delta, from: this.origin } satisfies Message; // `from` last
    this.publisher.publish(this.channel, `${invocationId} ${JSON.stringify(message)}`).catch(() => undefined);
  }

  watchAbort(invocationId: string, onAbort: () => void): () => void {
    void this.listen().catch((err: unknown) => this.logger.warn({ err }, 'abort channel unavailable'));
    this.streams.set(invocationId, onAbort);
    return () => this.streams.delete(invocationId);
  }

  /**
   * Stops the call at the worker streaming it now; with `forestall`, also leaves a mark (kept for
   * an hour) that a worker starting it later reads (`hungUp`): a client may hang up while its call
   * is queued.
   */
  async abort(invocationId: string, forestall: boolean): Promise<void> {
    const batch = this.publisher.multi();
    if (forestall) batch.set(this.markKey('hung-up', invocationId), '1', 'PX', MARK_MS);
    await batch.publish(this.abortChannel, invocationId).exec();
  }

  hungUp(invocationId: string): Promise<boolean> {
    return this.marked('hung-up', invocationId);
  }

  /** Sent before the first piece, on the same connection, so it is set before any piece is out. */
  begin(invocationId: string): void {
    this.publisher.set(this.markKey('streamed', invocationId), '1', 'PX', MARK_MS).catch(() => undefined);
  }

  begun(invocationId: string): Promise<boolean> {
    return this.marked('streamed', invocationId);
  }

  follow(invocationId: string, onPiece: (delta: StreamDelta) => void, ms: number) {
    return this.register(invocationId, ms, onPiece);
  }

  async finished(invocation: Invocation): Promise<void> {
    this.settleAll(this.waiters.get(invocation.id), invocation);
    await this.publisher.publish(this.channel, encode(invocation));
  }

  /** Wakes whoever waits on `id` with no payload (an evaluation: its answer is read elsewhere). */
  async announce(id: string): Promise<void> {
    this.settleAll(this.waiters.get(id), null);
    await this.publisher.publish(this.channel, `${id} ${JSON.stringify({ id } satisfies Message)}`);
  }

  /** Subscribes (once per process); the API calls it at start so the first waiter pays nothing. */
  listen(): Promise<void> {
    this.listening ??= this.subscribe();
    return this.listening;
  }

  wait(invocationId: string, ms: number): { result: Promise<WaitResult>; cancel(): void } {
    return this.register(invocationId, ms);
  }

  private register(
    invocationId: string,
    ms: number,
    onPiece?: (delta: StreamDelta) => void,
  ): { result: Promise<WaitResult>; cancel(): void } {
    if (this.draining) return { result: Promise.resolve({ kind: 'timeout' }), cancel: () => undefined };
    void this.listen().catch((err: unknown) => this.logger.warn({ err }, 'completion channel unavailable'));
    let settle: (result: WaitResult) => void = () => undefined;
    const result = new Promise<WaitResult>((resolve) => {
      const timer = setTimeout(() => settle({ kind: 'timeout' }), ms);
      const listener: Listener = { settle: (outcome) => settle(outcome), ...(onPiece ? { onPiece } : {}) };
      settle = (outcome) => {
        clearTimeout(timer);
        this.forget(invocationId, listener);
        resolve(outcome);
      };
      const set = this.waiters.get(invocationId) ?? new Set();
      set.add(listener);
      this.waiters.set(invocationId, set);
    });
    return { result, cancel: () => settle({ kind: 'timeout' }) };
  }

  /** How many requests are waiting in this process (for tests and metrics). */
  get waiting(): number {
    let n = 0;
    for (const set of this.waiters.values()) n += set.size;
    return n;
  }

  /**
   * Shutdown: every waiting request is answered now with the invocation as it is (a long poll
   * must not hold the process for up to max_wait_seconds), and later waits return at once.
   */
  stopWaiting(): void {
    this.draining = true;
    for (const set of [...this.waiters.values()])
      for (const listener of [...set]) listener.settle({ kind: 'timeout' });
  }

  async close(): Promise<void> {
    this.stopWaiting();
    this.subscriber?.disconnect();
    this.subscriber = null;
    this.listening = null;
  }

  private async subscribe(): Promise<void> {
    const subscriber = new Redis(this.redisUrl, { lazyConnect: true, maxRetriesPerRequest: null });
    subscriber.on('error', () => undefined); // reconnects by itself and resubscribes
    subscriber.on('message', (channel: string, text: string) =>
      channel === this.abortChannel ? this.streams.get(text)?.() : this.deliver(text),
    );
    this.subscriber = subscriber;
    await subscriber.connect();
    await subscriber.subscribe(this.channel, this.abortChannel);
  }

  private deliver(text: string): void {
    const space = text.indexOf(' ');
    const set = space > 0 ? this.waiters.get(text.slice(0, space)) : undefined;
    if (!set || text.endsWith(this.ownPieceEnd)) return;
    let message: Message;
    try {
      message = JSON.parse(text.slice(space + 1)) as Message;
    } catch {
      return;
    }
    if (message.piece) return this.handPiece(set, message.piece);
    this.settleAll(set, message.invocation ? revive(message.invocation) : null);
  }

  /** A follower's failure stays its own: in process it must not break the worker's stream. */
  private handPiece(set: Set<Listener> | undefined, piece: StreamDelta): void {
    if (!set) return;
    for (const listener of set)
      try {
        listener.onPiece?.(piece);
      } catch (err) {
        this.logger.warn({ err }, 'a stream follower failed on a piece');
      }
  }

  private settleAll(set: Set<Listener> | undefined, invocation: InvocationSummary | null): void {
    if (!set) return;
    for (const listener of [...set]) listener.settle({ kind: 'finished', invocation });
  }

  private forget(invocationId: string, listener: Listener): void {
    const set = this.waiters.get(invocationId);
    if (!set) return;
    set.delete(listener);
    if (set.size === 0) this.waiters.delete(invocationId);
  }
}
