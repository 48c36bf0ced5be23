import type { InvocationJob } from '../jobs';
import type { FreshInvoke } from './decide-at-submit';
import type { StreamDelta } from '../providers';
import type { Invocation, InvocationSummary } from './invocation';

export type InvocationStage = 'invocation.evaluate' | 'invocation.run';

/** Where a stage's job is: alive (waiting, delayed or running), gone, or ended without finishing the work. */
export type JobState = 'alive' | 'gone' | 'ended';

/** The queue, as the invoke pipeline uses it. */
export interface StageQueue {
  /** The invocation's first job (its own job id): the guardian stage, then, if admitted, the run. */
  submit(job: InvocationJob): Promise<void>;
  enqueue(stage: InvocationStage, job: InvocationJob): Promise<void>;
  state(stage: InvocationStage, invocationId: string): Promise<JobState>;
  /** Enqueues again, replacing an ended job of the same id (a plain enqueue would be deduplicated). */
  requeue(stage: InvocationStage, job: InvocationJob): Promise<void>;
}

/**
 * Runs an invocation whose client waits for it in the process that took the request, when that
 * process has room (CP_SYNC_INVOKES_IN_API): no queue hop.
 */
export interface SyncRunner {
  /** Whether this process runs invocations itself at all. */
  readonly active: boolean;
  /**
   * Decides, records and runs here an invocation not yet recorded (decide-at-submit.ts); resolves
   * with it as recorded. Null when this process cannot decide it now (no room within at most
   * `waitMs`, its org's turn for evaluation time): nothing is written then, and it is recorded
   * queued as any other.
   */
  decideHere(fresh: FreshInvoke, waitMs: number): Promise<Invocation | null>;
  /** Runs here an invocation recorded queued. False when it does not; it is then queued as any other. */
  runHere(job: InvocationJob): boolean;
}

/** The runner of a process that runs no invocation itself (a worker, or an API with the option off). */
export const QUEUED_ONLY: SyncRunner = {
  active: false,
  decideHere: () => Promise.resolve(null),
  runHere: () => false,
};

/**
 * Tells waiting clients that an invocation finished. Waiters are served by one subscription per
 * API process, not by a listener or a poll loop per request.
 */
export interface CompletionSignal {
  finished(invocation: Invocation): Promise<void>;
}

/** The signal carries the finished invocation, less its request, unless it was too large to broadcast. */
export type WaitResult = { kind: 'finished'; invocation: InvocationSummary | null } | { kind: 'timeout' };

export interface CompletionWaiter {
  /**
   * Resolves when the invocation's signal comes, or with `timeout` after `ms`. Register before
   * the work starts (or before reading the row), so a signal in between is not missed.
   */
  wait(invocationId: string, ms: number): { result: Promise<WaitResult>; cancel(): void };
}

/**
 * The pieces of a streamed answer, from the invoke worker to the API process streaming it to the
 * client, and the client's hang-up back to the worker. Pieces travel in order with the finished
 * signal (one channel), so the API has every piece it will get when it hears the end.
 */
export interface PieceRelay {
  piece(invocationId: string, delta: StreamDelta): void;
  /** Calls `onAbort` if the client streaming the invocation hangs up; returns the unsubscribe. */
  watchAbort(invocationId: string, onAbort: () => void): () => void;
  /** Whether the invocation's client hung up already (before its call began, say). */
  hungUp(invocationId: string): Promise<boolean>;
  /** Tells that the first piece is about to go out (before it does). */
  begin(invocationId: string): void;
}

export interface PieceFollower {
  /** As `CompletionWaiter.wait`, also handing each piece of the answer to `onPiece` as it comes. */
  follow(
    invocationId: string,
    onPiece: (delta: StreamDelta) => void,
    ms: number,
  ): { result: Promise<WaitResult>; cancel(): void };
  /**
   * Tells the worker streaming the invocation that its client hung up; with `forestall`, a worker
   * that starts the call later does not make it.
   */
  abort(invocationId: string, forestall: boolean): Promise<void>;
  /** Whether pieces of the invocation's answer went out already (a late follower missed some). */
  begun(invocationId: string): Promise<boolean>;
}
