import { getApproval, listApprovals, voteOnApproval } from '../../domain/approvals/approval-use-cases';
import type { VoteDecision } from '../../domain/approvals/approval';
import { callOf } from '../http/call-context';
import { approvalDeps } from '../http/deps';
import { defineRoute, needs, type RouteDef } from '../http/route';
import { presentApproval } from '../presenters';
import { ApprovalQuery, ApprovalView, VoteBody } from '../schemas/approvals.schemas';
import { decodeTimedCursor, encodeTimedCursor, listOf } from '../schemas/common';

const read = needs('policies:read');
const write = needs('policies:write');

const voteRoute = (decision: VoteDecision): RouteDef =>
  defineRoute({
    method: 'POST',
    path: `/v1/approvals/{id}/${decision}`,
    summary:
      decision === 'approve'
        ? 'Approve: with approvers_required distinct approvals the invocation resumes into the invoke stage'
        : 'Reject: the approval resolves rejected and its invocation is denied (approval_rejected)',
    tag: 'approvals',
    access: write,
    body: VoteBody,
    bodyOptional: true,
    responses: {
      200: { description: 'the approval after this vote', schema: ApprovalView },
      403: {
        description:
          'self_approval_forbidden: the identity that requested the invocation cannot vote, nor can its rotated key or a key it minted (directly or through its keys); the key an org signup returned is the identity of the person who signed up',
      },
      404: { description: 'no such approval in this org' },
      409: {
        description:
          'conflict: this identity already voted (a key and a key it minted or was rotated into, in either order, are one identity); invalid_state: the approval is no longer pending (a vote after expires_at expires it)',
      },
    },
    handle: async (input) => {
      const approval = await voteOnApproval(approvalDeps(input.infra), callOf(input), input.params.id ?? '', {
        decision,
        comment: input.body.comment ?? null,
      });
      return { status: 200, body: presentApproval(approval) };
    },
  });

export const approvalRoutes = [
  defineRoute({
    method: 'GET',
    path: '/v1/approvals',
    summary:
      "The org's approvals, newest first (by created_at, then id; the cursor pages on without gaps or repeats); filters combine with AND",
    tag: 'approvals',
    access: read,
    query: ApprovalQuery,
    responses: {
      200: { description: 'a page of approvals (summaries without messages)', schema: listOf(ApprovalView) },
    },
    handle: async (input) => {
      const { query } = input;
      const filter = {
        status: query.status,
        agentId: query.agent_id,
        sessionId: query.session_id,
        policyId: query.policy_id,
      };
      const page = await listApprovals(approvalDeps(input.infra), callOf(input), filter, {
        limit: query.limit,
        after: decodeTimedCursor(query.cursor, 'approvals'),
      });
      return {
        status: 200,
        body: {
          data: page.items.map(presentApproval),
          next_cursor: encodeTimedCursor(page.next, 'approvals'),
        },
      };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/approvals/{id}',
    summary: 'One approval, with the messages exactly as they would be sent (redactions applied)',
    tag: 'approvals',
    access: read,
    responses: {
      200: { description: 'the approval', schema: ApprovalView },
      404: { description: 'no such approval in this org' },
    },
    handle: async (input) => {
      const approval = await getApproval(approvalDeps(input.infra), callOf(input), input.params.id ?? '');
      return { status: 200, body: presentApproval(approval) };
    },
  }),
  voteRoute('approve'),
  voteRoute('reject'),
];
