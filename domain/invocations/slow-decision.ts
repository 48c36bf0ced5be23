import type { Clock } from '../clock';
import type { Guardian, GuardianInput, GuardianVerdict } from '../policy/guardian';
import type { GuardianView, InvocationStore } from './invocation-store';

/**
 * A guardian decision that took this long is followed by a fresh read of the invocation's
 * session and key. An ordinary decision takes well under a millisecond; a heavy evaluation may
 * wait seconds for the policy thread, and a new policy_version may take as long to compile, and
 * the session closed or the key revoked meanwhile must still stop the call (QA: a call went out 20 s
 * after both, on checks made before its evaluation waited).
 */
export const SLOW_DECISION_MS = 100;

export interface FreshDecisionDeps {
  store: InvocationStore;
  guardian: Guardian;
  clock: Clock;
}

/** The verdict, when it came, and the invocation's view as it stands then (read again if the decision was slow). */
export interface FreshDecision {
  verdict: GuardianVerdict;
  at: Date;
  view: GuardianView;
}

export async function decideFresh(
  deps: FreshDecisionDeps,
  view: GuardianView,
  input: GuardianInput,
): Promise<FreshDecision> {
  const started = deps.clock.now().getTime();
  const verdict = await deps.guardian.decide(input);
  const at = deps.clock.now();
  if (at.getTime() - started < SLOW_DECISION_MS) return { verdict, at, view };
  const fresh = await deps.store.forGuardian(view.invocation.id);
  return { verdict, at, view: fresh ?? view };
}
