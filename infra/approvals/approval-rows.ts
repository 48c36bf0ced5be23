import type { ActorType } from '../../domain/audit/audit-event';
import type { Approval, ApprovalStatus, VoteDecision } from '../../domain/approvals/approval';
import { toDate, toDateOrNull, type Time } from '../db/row-values';
import {
  loadMessage,
  loadReasons,
  storeReasons,
  type StoredMessage,
  type StoredReason,
} from '../invocations/invocation-rows';

interface StoredSummary {
  model: string;
  provider: string;
  credential_ref: string;
  max_tokens: number;
  tool: { name: string; arguments: unknown } | null;
  estimated_cost_usd: number;
  reasons: StoredReason[];
}

export interface ApprovalRow {
  id: string;
  org_id: string;
  invocation_id: string;
  session_id: string;
  agent_id: string | null;
  policy_id: string;
  policy_version: number;
  request_digest: string;
  summary: StoredSummary;
  requested_by_type: string;
  requested_by: string;
  approvers_required: number;
  status: string;
  created_at: Time;
  expires_at: Time;
  resolved_at: Time | null;
  votes: { voter_type: string; voter_id: string; decision: string; comment: string | null; at: Time }[];
  messages?: StoredMessage[] | null;
  tools?: unknown[] | null;
  tool_choice?: unknown;
}

export const approvalJson = (a: Approval) => ({
  id: a.id,
  org_id: a.orgId,
  invocation_id: a.invocationId,
  session_id: a.sessionId,
  agent_id: a.agentId,
  policy_id: a.policyId,
  policy_version: a.policyVersion,
  request_digest: a.requestDigest,
  summary: {
    model: a.summary.model,
    provider: a.summary.provider,
    credential_ref: a.summary.credentialRef,
    max_tokens: a.summary.maxTokens,
    tool: a.summary.tool,
    estimated_cost_usd: a.summary.estimatedCostUsd,
    reasons: storeReasons(a.summary.reasons),
  } satisfies StoredSummary,
  requested_by_type: a.requestedBy.type,
  requested_by: a.requestedBy.id,
  approvers_required: a.approversRequired,
  status: a.status,
  created_at: a.createdAt,
  expires_at: a.expiresAt,
});

export const toApproval = (r: ApprovalRow): Approval => ({
  id: r.id,
  orgId: r.org_id,
  status: r.status as ApprovalStatus,
  invocationId: r.invocation_id,
  sessionId: r.session_id,
  agentId: r.agent_id,
  policyId: r.policy_id,
  policyVersion: Number(r.policy_version),
  requestDigest: r.request_digest,
  summary: {
    model: r.summary.model,
    provider: r.summary.provider,
    credentialRef: r.summary.credential_ref,
    maxTokens: r.summary.max_tokens,
    tool: r.summary.tool,
    estimatedCostUsd: r.summary.estimated_cost_usd,
    reasons: loadReasons(r.summary.reasons),
    ...(r.messages ? { messages: r.messages.map(loadMessage) } : {}),
    ...(r.tools ? { tools: r.tools } : {}),
    ...(r.tool_choice !== null && r.tool_choice !== undefined ? { toolChoice: r.tool_choice } : {}),
  },
  requestedBy: { type: r.requested_by_type as ActorType, id: r.requested_by },
  approversRequired: Number(r.approvers_required),
  votes: r.votes.map((v) => ({
    by: { type: v.voter_type as ActorType, id: v.voter_id },
    decision: v.decision as VoteDecision,
    comment: v.comment,
    at: toDate(v.at),
  })),
  createdAt: toDate(r.created_at),
  expiresAt: toDate(r.expires_at),
  resolvedAt: toDateOrNull(r.resolved_at),
});
