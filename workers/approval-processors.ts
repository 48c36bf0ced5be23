import { SYSTEM_ACTOR } from '../domain/audit/audit-event';
import { resolve } from '../domain/approvals/approval-use-cases';
import { withdrawStranded } from '../domain/approvals/withdraw-stranded';
import type { ApprovalJob } from '../domain/jobs';
import { approvalDeps } from '../infra/approvals/approval-deps';
import type { Infra } from '../infra/container';

/** The delayed job of one approval: at its `expires_at`, expire it (a resolved one is left alone). */
export async function expireApproval(payload: ApprovalJob, infra: Infra): Promise<string> {
  const done = await resolve(approvalDeps(infra), payload.org_id, payload.approval_id, { kind: 'expire' });
  // Early by the clocks' difference: fail, and the job's backoff tries again in a moment.
  if (done?.result === 'not_due') throw new Error(`approval ${payload.approval_id} is not due yet`);
  return done?.result ?? 'gone';
}

/**
 * Backs up the delayed jobs: expires pending approvals past their time whose job was lost. Then
 * withdraws those whose invocation can no longer run (a session or key that expired meanwhile, or
 * a close or revocation whose own withdrawal did not happen).
 */
export async function sweepApprovals(infra: Infra): Promise<{ expired: number; withdrawn: number }> {
  const deps = approvalDeps(infra);
  const due = await infra.approvals.pastExpiry(infra.clock.now(), 100);
  let expired = 0;
  for (const { id, orgId } of due) {
    const done = await resolve(deps, orgId, id, { kind: 'expire' });
    if (done?.result === 'resolved') expired++;
  }
  return { expired, withdrawn: await withdrawStranded(deps, SYSTEM_ACTOR, null) };
}
