import type { InvocationStatus } from './invocation';
import type { InvocationStage } from './signals';

interface StatusRule {
  /** The statuses an invocation in this one may move to (a conditional write guards each move). */
  next: readonly InvocationStatus[];
  /** The stage job that moves it on; null when no job does (a final status, or a person's turn). */
  stage: InvocationStage | null;
  /**
   * What ends it when it stalls: `reaper` checks it against its stage job once it made no
   * progress for CP_REAP_AFTER_MS; null when nothing needs to (a final status).
   */
  timeout: 'reaper' | 'approval_expiry' | null;
}

/**
 * The one table of an invocation's lifecycle: the next statuses each one allows, the job that runs
 * it and what ends it when it stalls. The reaper, the SQL guards, cancel and the guardian stage
 * derive their rules from here, so a new paused state is one edit. `evaluating` is the contract's
 * name for a decision in progress: the guardian decides a queued invocation in one write, so no
 * row rests there today. `awaiting_approval` holds no job: people move it on (approvals), or its
 * approval's expiry does.
 */
export const LIFECYCLE: Readonly<Record<InvocationStatus, StatusRule>> = {
  queued: {
    next: ['running', 'awaiting_approval', 'denied', 'failed', 'cancelled'],
    stage: 'invocation.evaluate',
    timeout: 'reaper',
  },
  evaluating: {
    next: ['running', 'awaiting_approval', 'denied', 'failed', 'cancelled'],
    stage: 'invocation.evaluate',
    timeout: 'reaper',
  },
  awaiting_approval: {
    next: ['running', 'denied', 'cancelled'],
    stage: null,
    timeout: 'approval_expiry',
  },
  // `running` to `running`: a failed provider attempt recorded before a retry. `running` to
  // `denied`: an approved invocation that no longer fits the session's caps when it resumes.
  running: {
    next: ['running', 'succeeded', 'failed', 'denied'],
    stage: 'invocation.run',
    timeout: 'reaper',
  },
  succeeded: { next: [], stage: null, timeout: null },
  failed: { next: [], stage: null, timeout: null },
  denied: { next: [], stage: null, timeout: null },
  cancelled: { next: [], stage: null, timeout: null },
};

const STATUSES = Object.keys(LIFECYCLE) as InvocationStatus[];

export const canMove = (from: InvocationStatus, to: InvocationStatus): boolean =>
  LIFECYCLE[from].next.includes(to);

/** Every status an invocation may reach `to` from: the guard of a conditional write to `to`. */
export const statusesInto = (to: InvocationStatus): InvocationStatus[] =>
  STATUSES.filter((from) => canMove(from, to));

/** The statuses a stage job works on: its writes apply only while the invocation is in one. */
export const statusesOf = (stage: InvocationStage): InvocationStatus[] =>
  STATUSES.filter((s) => LIFECYCLE[s].stage === stage);

/** The stage job an invocation in `status` waits on, if any. */
export const stageOf = (status: InvocationStatus): InvocationStage | null => LIFECYCLE[status].stage;

/** Statuses the reaper watches: an invocation resting in one past its time is checked against its job. */
export const REAPABLE: readonly InvocationStatus[] = STATUSES.filter(
  (s) => LIFECYCLE[s].timeout === 'reaper',
);

/** Before the provider is called, an invocation may still be cancelled. */
export const CANCELLABLE: readonly InvocationStatus[] = statusesInto('cancelled');

export const isTerminal = (status: InvocationStatus): boolean => LIFECYCLE[status].next.length === 0;
