import type { Actor } from '../audit/audit-event';
import { lapsedWhileWaiting } from '../invocations/lapsed-while-waiting';
import type { StrandedScope } from './approval-store';
import { resolve, type ApprovalDeps } from './approval-use-cases';

const NOT_SENT = 'the request that waited for approval was not run, and its approval was withdrawn';

/**
 * Withdraws pending approvals whose invocation can no longer run: its session closed or expired,
 * or the API key that asked was revoked or expired. An approval would only have ended it `failed`
 * (the check after an approval), so approvers are not asked about work no one can use: the
 * approval ends `cancelled` and the invocation `failed` with that same error, charged nothing.
 * Runs right after a session's close or a key's revocation (that scope), and in the approvals
 * sweep for the rest (expiries, a process that died in between). Returns how many it withdrew.
 */
export async function withdrawStranded(
  deps: ApprovalDeps,
  by: Actor,
  requestId: string | null,
  scope?: StrandedScope,
  limit = 100,
): Promise<number> {
  const now = deps.clock.now();
  let withdrawn = 0;
  for (const stranded of await deps.approvals.stranded(now, limit, scope)) {
    const view = await deps.invocations.forGuardian(stranded.invocationId);
    const stop = view && lapsedWhileWaiting(view, now, NOT_SENT);
    if (!stop) continue;
    const withdrawal = { kind: 'withdraw', by, requestId, error: stop.error } as const;
    const done = await resolve(deps, stranded.orgId, stranded.id, withdrawal);
    if (done?.result === 'resolved') withdrawn++;
  }
  return withdrawn;
}
