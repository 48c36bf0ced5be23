import type { Clock } from '../clock';
import type { Guardian } from '../policy/guardian';
import { statusAt } from '../sessions/session';
import { guardianInput } from './evaluate-invocation';
import type { Invocation, InvocationError } from './invocation';
import type { InvocationStore } from './invocation-store';

export interface ResumeCheckDeps {
  store: InvocationStore;
  guardian: Guardian;
  clock: Clock;
}

/** Why an approved invocation is not run after all, and how it ends. */
export interface StopSinceApproval {
  status: 'failed' | 'denied';
  error: InvocationError;
}

/**
 * An approved invocation waited for people, for hours maybe, holding nothing: what operators did
 * meanwhile still counts before it reaches the provider. A session closed or expired ends it as a
 * queued one would end (`session_not_open`); so does anything the guardian now denies (its agent
 * suspended, a deny policy added, a credential taken off the agent): deny beats an approval as it
 * beats require_approval. Any other verdict runs the request exactly as it was approved.
 */
export async function stoppedSinceApproval(
  deps: ResumeCheckDeps,
  invocation: Invocation,
): Promise<StopSinceApproval | null> {
  const view = await deps.store.forGuardian(invocation.id);
  if (!view) return null;
  const status = statusAt(view.session, deps.clock.now());
  if (status !== 'open') {
    const message = `session ${invocation.sessionId} is ${status}; the approved request was not run`;
    return { status: 'failed', error: { errorCode: 'session_not_open', message } };
  }
  const verdict = await deps.guardian.decide(guardianInput({ ...view, invocation }));
  if (verdict.verdict !== 'deny') return null;
  const message = `denied after its approval: ${verdict.reasons.map((r) => r.message).join('; ')}`;
  return { status: 'denied', error: { errorCode: 'guardian_denied', message } };
}
