import type { Clock } from '../clock';
import { conflict, DomainError, invalidState, notFound } from '../errors';
import type { InvocationStore } from '../invocations/invocation-store';
import type { CompletionSignal, StageQueue } from '../invocations/signals';
import { actorOf, type CallContext } from '../principal';
import type { Approval, VoteDecision } from './approval';
import type { ApprovalFilter, ApprovalPage, ApprovalStore, QueuePosition } from './approval-store';
import { resolveApproval, type Resolution, type ResolutionResult } from './resolve-approval';
import { lineages, type LineageSource } from './voter-lineage';

export interface ApprovalDeps {
  approvals: ApprovalStore;
  invocations: InvocationStore;
  queue: StageQueue;
  signal: CompletionSignal;
  clock: Clock;
  lineage: LineageSource;
}

/**
 * `GET /v1/approvals`: the org's approvals, newest first as every list; the approver's page asks
 * for the queue oldest first (it is worked from its head, and the oldest expire first).
 */
export const listApprovals = (
  deps: Pick<ApprovalDeps, 'approvals'>,
  ctx: CallContext,
  filter: ApprovalFilter,
  page: ApprovalPage,
): Promise<{ items: Approval[]; next: QueuePosition | null }> =>
  deps.approvals.list(ctx.principal.orgId, filter, page);

/** `GET /v1/approvals/{id}`: one approval with the messages of the request it would run. */
export async function getApproval(
  deps: Pick<ApprovalDeps, 'approvals'>,
  ctx: CallContext,
  id: string,
): Promise<Approval> {
  const approval = await deps.approvals.get(ctx.principal.orgId, id);
  if (!approval) throw notFound('approval');
  return approval;
}

/**
 * After a resolution committed: an approved invocation goes to the invoke queue (if this enqueue is
 * lost, the reaper finds the invocation running without a job and enqueues it); an ended one
 * wakes its waiting clients. (Webhooks hear of it from the audit log.)
 */
async function afterResolution(deps: ApprovalDeps, approval: Approval): Promise<void> {
  if (approval.status === 'approved') {
    const job = { invocation_id: approval.invocationId, org_id: approval.orgId, trace: {} };
    await deps.queue.enqueue('invocation.run', job);
    return;
  }
  const invocation = await deps.invocations.get(approval.orgId, approval.invocationId);
  if (invocation) await deps.signal.finished(invocation);
}

/** Runs one resolution under the approval's lock; null when the approval does not exist. */
export async function resolve(
  deps: ApprovalDeps,
  orgId: string | null,
  id: string,
  resolution: Resolution,
): Promise<{ approval: Approval; result: ResolutionResult } | null> {
  const done = await deps.approvals.change(orgId, id, (locked) =>
    resolveApproval(locked, resolution, deps.clock.now()),
  );
  if (done && (done.result === 'resolved' || done.result === 'expired'))
    await afterResolution(deps, done.approval);
  return done;
}

const refusal = (result: ResolutionResult, approval: Approval): DomainError | null => {
  switch (result) {
    case 'self':
      return new DomainError(
        'self_approval_forbidden',
        'the identity that requested this invocation cannot vote on its approval',
      );
    case 'duplicate':
      return conflict(
        `approval ${approval.id} already has a vote from you, a key you minted or rotated, or the key's minter`,
      );
    case 'unknown_voter':
      return conflict(`votes on approval ${approval.id} keep arriving; send yours again`);
    case 'expired':
    case 'not_pending':
    case 'not_due':
      return invalidState(
        approval.status,
        `approval ${approval.id} is ${approval.status}; it takes no more votes`,
      );
    default:
      return null;
  }
};

/** Votes that landed between a read of the lineages and the lock make this many reads at most. */
const LINEAGE_READS = 3;

/**
 * `POST /v1/approvals/{id}/approve|reject`: one vote per identity, never by the identity that asked
 * (identities as `voter-lineage.ts` draws them). A vote that decides the approval resumes or denies
 * its invocation in the same transaction.
 */
export async function voteOnApproval(
  deps: ApprovalDeps,
  ctx: CallContext,
  id: string,
  vote: { decision: VoteDecision; comment: string | null },
): Promise<Approval> {
  const { orgId } = ctx.principal;
  const by = actorOf(ctx.principal);
  let seen = await deps.approvals.get(orgId, id);
  for (let read = 1; seen; read++) {
    const actors = [by, seen.requestedBy, ...seen.votes.map((v) => v.by)];
    const lines = lineages(actors, await deps.lineage.linksOf(orgId, actors));
    const resolution = { kind: 'vote' as const, by, ...vote, requestId: ctx.requestId, lineages: lines };
    const done = await resolve(deps, orgId, id, resolution);
    if (!done) break;
    if (done.result === 'unknown_voter' && read < LINEAGE_READS) {
      seen = done.approval;
      continue;
    }
    const refused = refusal(done.result, done.approval);
    if (refused) throw refused;
    return done.approval;
  }
  throw notFound('approval');
}
