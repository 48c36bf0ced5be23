import type { Actor } from '../audit/audit-event';
import { lapsedWhileWaiting } from '../invocations/lapsed-while-waiting';
import type { StrandedApproval, StrandedScope } from './approval-store';
import { resolve, type ApprovalDeps } from './approval-use-cases';

const NOT_SENT = 'the request that waited for approval was not run, and its approval was withdrawn';

/**
 * Withdraws pending approvals whose invocation can no longer run: its session closed or expired,
 * or the API key that asked was revoked or expired. An approval would only have ended it `failed`
 * (the check after an approval), so approvers are not asked about work no one can use: the
 * approval ends `cancelled` and the invocation `failed` with that same error, charged nothing.
 * Runs right after a session's close or a key's revocation (that scope), and in the approvals
 * sweep for the rest (expiries, a process that died in between), `batch` at a time up to `most`
 * (a session with more waiting than that leaves the rest to the sweep). Returns how many it
 * withdrew.
 */
export async function withdrawStranded(
  deps: ApprovalDeps,
  by: Actor,
  requestId: string | null,
  scope?: StrandedScope,
  { batch = 100, most = 1000 } = {},
): Promise<number> {
  const now = deps.clock.now();
  let withdrawn = 0;
  for (let seen = 0; seen < most;) {
    const found = await deps.approvals.stranded(now, batch, scope);
    let moved = 0;
    for (const stranded of found) moved += await withdraw(deps, stranded, now, by, requestId);
    withdrawn += moved;
    seen += found.length;
    // A short batch was the last; one that withdrew nothing would only be read again.
    if (found.length < batch || moved === 0) break;
  }
  return withdrawn;
}

/** One approval withdrawn under its lock: 1 if this call did it. */
async function withdraw(
  deps: ApprovalDeps,
  stranded: StrandedApproval,
  now: Date,
  by: Actor,
  requestId: string | null,
): Promise<number> {
  const view = await deps.invocations.forGuardian(stranded.invocationId);
  const stop = view && lapsedWhileWaiting(view, now, NOT_SENT);
  if (!stop) return 0;
  const withdrawal = { kind: 'withdraw', by, requestId, error: stop.error } as const;
  const done = await resolve(deps, stranded.orgId, stranded.id, withdrawal);
  return done?.result === 'resolved' ? 1 : 0;
}
