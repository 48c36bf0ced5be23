import type { Clock } from '../clock';
import { conflict, DomainError, invalidState, notFound } from '../errors';
import type { InvocationStore } from '../invocations/invocation-store';
import type { CompletionSignal, StageQueue } from '../invocations/signals';
import { actorOf, type CallContext } from '../principal';
import { approvalAsOf, isOverdue, type Approval, type VoteDecision } from './approval';
import type {
  ApprovalFilter,
  ApprovalPage,
  ApprovalStore,
  LockedApproval,
  QueuePosition,
} from './approval-store';
import { resolveApproval, type Resolution, type ResolutionResult } from './resolve-approval';
import { lineages, type Lineage, type LineageSource } from './voter-lineage';

export interface ApprovalDeps {
  approvals: ApprovalStore;
  invocations: InvocationStore;
  queue: StageQueue;
  signal: CompletionSignal;
  clock: Clock;
}

/**
 * `GET /v1/approvals`: the org's approvals, newest first as every list; the approver's page asks
 * for the queue oldest first (it is worked from its head, and the oldest expire first).
 */
export async function listApprovals(
  deps: Pick<ApprovalDeps, 'approvals' | 'clock'>,
  ctx: CallContext,
  filter: ApprovalFilter,
  page: ApprovalPage,
): Promise<{ items: Approval[]; next: QueuePosition | null }> {
  const now = deps.clock.now();
  const found = await deps.approvals.list(ctx.principal.orgId, filter, page, now);
  return { ...found, items: found.items.map((a) => approvalAsOf(a, now)) };
}

/** `GET /v1/approvals/{id}`: one approval with the messages of the request it would run. */
export async function getApproval(
  deps: Pick<ApprovalDeps, 'approvals' | 'clock'>,
  ctx: CallContext,
  id: string,
): Promise<Approval> {
  const approval = await deps.approvals.get(ctx.principal.orgId, id);
  if (!approval) throw notFound('approval');
  return approvalAsOf(approval, deps.clock.now());
}

/**
 * An invocation read while it waits on an approval past its time: the approval is expired now, as
 * a vote would expire it, so the reader learns of the timeout even while no worker is up to record
 * it. True when this call expired it.
 */
export async function expireIfOverdue(
  deps: ApprovalDeps,
  orgId: string,
  approvalId: string,
): Promise<boolean> {
  const approval = await deps.approvals.get(orgId, approvalId, false);
  if (!approval || !isOverdue(approval, deps.clock.now())) return false;
  const done = await resolve(deps, orgId, approvalId, { kind: 'expire' });
  return done?.result === 'resolved';
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

/** The key lineages a vote is judged on: the voter's, the requester's and each earlier voter's. */
async function lineagesFor(locked: LockedApproval, resolution: Resolution, lineage: LineageSource) {
  const { approval } = locked;
  if (resolution.kind !== 'vote' || approval.status !== 'pending') return new Map<string, Lineage>();
  const actors = [resolution.by, approval.requestedBy, ...approval.votes.map((v) => v.by)];
  return lineages(actors, await lineage.linksOf(approval.orgId, actors));
}

/** Runs one resolution under the approval's lock; null when the approval does not exist. */
export async function resolve(
  deps: ApprovalDeps,
  orgId: string | null,
  id: string,
  resolution: Resolution,
): Promise<{ approval: Approval; result: ResolutionResult } | null> {
  const done = await deps.approvals.change(orgId, id, async (locked, lineage) =>
    resolveApproval(locked, resolution, deps.clock.now(), await lineagesFor(locked, resolution, lineage)),
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
        'the identity that requested this invocation cannot vote on its approval, nor can a key it minted (directly or through its keys) or a rotation of its key',
      );
    case 'duplicate':
      return conflict(
        `approval ${approval.id} already has a vote from you, a key you minted or rotated, or the key's minter`,
      );
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
  const by = actorOf(ctx.principal);
  const done = await resolve(deps, ctx.principal.orgId, id, {
    kind: 'vote',
    by,
    ...vote,
    requestId: ctx.requestId,
  });
  if (!done) throw notFound('approval');
  const refused = refusal(done.result, done.approval);
  if (refused) throw refused;
  return done.approval;
}
