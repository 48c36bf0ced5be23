import Redis from 'ioredis';
import type { Invocation } from '../../domain/invocations/invocation';
import type { CompletionSignal, CompletionWaiter, WaitResult } from '../../domain/invocations/signals';
import type { Logger } from '../logger';

/** Larger invocations are announced by id only; waiters then read the row. */
const MAX_MESSAGE_BYTES = 64 * 1024;

interface Message {
  id: string;
  invocation?: Invocation;
}

const revive = (i: Invocation): Invocation => ({
  ...i,
  createdAt: new Date(i.createdAt),
  updatedAt: new Date(i.updatedAt),
  completedAt: i.completedAt ? new Date(i.completedAt) : null,
});

/**
 * `<id> <json>`: every API process receives every message, so the id comes first and the JSON is
 * parsed only where someone waits for that invocation.
 */
function encode(invocation: Invocation): string {
  const full = JSON.stringify({ id: invocation.id, invocation } satisfies Message);
  return `${invocation.id} ${Buffer.byteLength(full) <= MAX_MESSAGE_BYTES ? full : JSON.stringify({ id: invocation.id })}`;
}

/**
 * Finished invocations are published on one Redis channel; each API process holds one
 * subscription and a map from invocation id to its waiting requests. A thousand waiters cost a
 * thousand map entries and timers, not a thousand Redis listeners or poll loops. A lost message
 * (Redis restarting) costs only latency: a waiter whose wait runs out reads the row once.
 */
export class CompletionHub implements CompletionSignal, CompletionWaiter {
  private subscriber: Redis | null = null;
  private draining = false;
  private listening: Promise<void> | null = null;
  private readonly waiters = new Map<string, Set<(result: WaitResult) => void>>();
  private readonly channel: string;

  constructor(
    private readonly publisher: Redis,
    private readonly redisUrl: string,
    prefix: string,
    private readonly logger: Logger,
  ) {
    this.channel = `${prefix}:invocations:finished`;
  }

  async finished(invocation: Invocation): Promise<void> {
    await this.publisher.publish(this.channel, encode(invocation));
  }

  /** Wakes whoever waits on `id` with no payload (an evaluation: its answer is read elsewhere). */
  async announce(id: string): Promise<void> {
    await this.publisher.publish(this.channel, `${id} ${JSON.stringify({ id } satisfies Message)}`);
  }

  /** Subscribes (once per process); the API calls it at start so the first waiter pays nothing. */
  listen(): Promise<void> {
    this.listening ??= this.subscribe();
    return this.listening;
  }

  wait(invocationId: string, ms: number): { result: Promise<WaitResult>; cancel(): void } {
    if (this.draining) return { result: Promise.resolve({ kind: 'timeout' }), cancel: () => undefined };
    void this.listen().catch((err: unknown) => this.logger.warn({ err }, 'completion channel unavailable'));
    let settle: (result: WaitResult) => void = () => undefined;
    const result = new Promise<WaitResult>((resolve) => {
      const timer = setTimeout(() => settle({ kind: 'timeout' }), ms);
      settle = (outcome) => {
        clearTimeout(timer);
        this.forget(invocationId, settle);
        resolve(outcome);
      };
      const set = this.waiters.get(invocationId) ?? new Set();
      set.add(settle);
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
    for (const set of [...this.waiters.values()]) for (const settle of [...set]) settle({ kind: 'timeout' });
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
    subscriber.on('message', (_channel: string, text: string) => this.deliver(text));
    this.subscriber = subscriber;
    await subscriber.connect();
    await subscriber.subscribe(this.channel);
  }

  private deliver(text: string): void {
    const space = text.indexOf(' ');
    const set = space > 0 ? this.waiters.get(text.slice(0, space)) : undefined;
    if (!set) return;
    let message: Message;
    try {
      message = JSON.parse(text.slice(space + 1)) as Message;
    } catch {
      return;
    }
    const invocation = message.invocation ? revive(message.invocation) : null;
    for (const settle of [...set]) settle({ kind: 'finished', invocation });
  }

  private forget(invocationId: string, settle: (result: WaitResult) => void): void {
    const set = this.waiters.get(invocationId);
    if (!set) return;
    set.delete(settle);
    if (set.size === 0) this.waiters.delete(invocationId);
  }
}
