import type { Clock } from '../clock';
import type { AgentGate, Guardian, GuardianInput, GuardianVerdict } from '../policy/guardian';
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

/**
 * The verdict, when it came, the view it was decided on, and the invocation's view as it stands
 * then (read again if the decision was slow).
 */
export interface FreshDecision {
  verdict: GuardianVerdict;
  at: Date;
  decidedOn: GuardianView;
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
  if (at.getTime() - started < SLOW_DECISION_MS) return { verdict, at, decidedOn: view, view };
  const fresh = await deps.store.forGuardian(view.invocation.id);
  return { verdict, at, decidedOn: view, view: fresh ?? view };
}

/** Decisions after the first, at most, while what a verdict was reached on keeps changing. */
export const REDECISIONS = 2;

const sameList = (a: string[], b: string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/** The agent as the guardian judges it: its status, models and credentials. */
const sameGate = (a: AgentGate | null, b: AgentGate | null): boolean =>
  a === b ||
  (a !== null &&
    b !== null &&
    a.id === b.id &&
    a.status === b.status &&
    sameList(a.allowedModels, b.allowedModels) &&
    sameList(a.credentialRefs, b.credentialRefs));

/**
 * Whether the verdict was reached on the org's policies and the agent as they stand in `view`. The
 * guardian decides on the policy_version it was given or a newer one it found (CompiledPolicies).
 */
const onCurrent = ({ verdict, decidedOn, view }: FreshDecision): boolean =>
  Math.max(verdict.policyVersion, decidedOn.policyVersion) >= view.policyVersion &&
  sameGate(decidedOn.agent, view.agent);

/**
 * A verdict reached on policies or an agent that changed before it was recorded (while it was
 * slow, or before the invocation's row existed: decide-at-submit.ts) is reached again on what
 * stands now (QA: an agent suspended, its models narrowed, a deny or redaction policy added while
 * a decision waited on a busy policy thread were not seen). `first`: a verdict already reached.
 * Under changes that never stop, the last of REDECISIONS more is taken.
 */
export async function decideOnCurrent(
  deps: FreshDecisionDeps,
  view: GuardianView,
  inputOf: (view: GuardianView) => GuardianInput,
  first?: FreshDecision,
): Promise<FreshDecision> {
  let decided = first ?? (await decideFresh(deps, view, inputOf(view)));
  for (let again = 0; again < REDECISIONS && !onCurrent(decided); again++)
    decided = await decideFresh(deps, decided.view, inputOf(decided.view));
  return decided;
}
