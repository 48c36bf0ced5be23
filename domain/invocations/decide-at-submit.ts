import type { AuditEvent } from '../audit/audit-event';
import type { Clock } from '../clock';
import type { Guardian } from '../policy/guardian';
import { decisionWrite, guardianInput, type PriorVerdict } from './evaluate-invocation';
import type { Invocation } from './invocation';
import type { DecisionWrite, GuardianView } from './invocation-store';
import { lapsedWhileWaiting } from './lapsed-while-waiting';
import { SLOW_DECISION_MS } from './slow-decision';

/**
 * An invoke the API runs itself (CP_SYNC_INVOKES_IN_API) is decided before it is recorded: the
 * guardian sees what admission has just read (the session open, the agent, the credential, the
 * org's policy_version; the key authenticated this very request), and the invocation is written
 * once, decided, with the audit entries of its request and of its decision (INSERT_DECIDED),
 * instead of queued, read again by the guardian stage and updated. Until its row exists nobody
 * knows the invocation's id, so nothing can read or cancel it; and it is written only while what
 * it was decided on is unchanged (INSERT_DECIDED checks), else it goes the guardian stage's way,
 * which reads all of that after it is recorded.
 */
export interface FreshInvoke {
  /** As admitted (status queued), not yet written. */
  invocation: Invocation;
  /** The audit entry of its request. */
  requested: AuditEvent;
  /** What the guardian decides on, as admission read it. */
  view: GuardianView;
  /** The agent's version as admission read it (null without one): recorded only if unchanged. */
  agentVersion: number | null;
  trace: Record<string, string>;
}

/**
 * The decision to record with the invocation, or a verdict that took long enough for anything it
 * was decided on to change meanwhile (`slow`): that one is recorded by the guardian stage after
 * the invocation is written queued and read again, as any slow decision is (or reached again, on
 * what changed: decideOnCurrent).
 */
export type SubmitDecision = { kind: 'decided'; write: DecisionWrite } | ({ kind: 'slow' } & PriorVerdict);

/**
 * Null for an invocation that would not be sent (its credential was deleted): the guardian stage
 * ends it as it ends one that lapsed while queued. Throws OrgAtCapacity when the org must wait its
 * turn for evaluation time. Nothing is written either way.
 */
export async function decideAtSubmit(
  deps: { guardian: Guardian; clock: Clock },
  view: GuardianView,
): Promise<SubmitDecision | null> {
  if (lapsedWhileWaiting(view, deps.clock.now(), 'it was not run')) return null;
  const started = deps.clock.now().getTime();
  const verdict = await deps.guardian.decide({ ...guardianInput(view), deferrable: true });
  const now = deps.clock.now().getTime();
  if (now - started >= SLOW_DECISION_MS) return { kind: 'slow', verdict, at: new Date(now), decidedOn: view };
  // After the request by a millisecond at least: the same millisecond would put the decision first
  // in the session's history, which orders by time, then id.
  const at = new Date(Math.max(now, view.invocation.createdAt.getTime() + 1));
  return { kind: 'decided', write: decisionWrite(view.invocation, verdict, at) };
}
