import type { Actor } from '../audit/audit-event';
import type { DecisionReason } from '../policy/verdict';
import type { ChatMessage } from '../providers';

export const APPROVAL_STATUSES = ['pending', 'approved', 'rejected', 'expired', 'cancelled'] as const;
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];

export type VoteDecision = 'approve' | 'reject';

export interface ApprovalVote {
  by: Actor;
  decision: VoteDecision;
  comment: string | null;
  at: Date;
}

/**
 * What the approver is asked to allow: the request exactly as it will run (with the policies'
 * redactions and clamps applied), and why it was held. `messages` is filled on a single read only.
 */
export interface ApprovalSummary {
  model: string;
  provider: string;
  credentialRef: string;
  maxTokens: number;
  tool: { name: string; arguments: unknown } | null;
  /** The worst case the call is reserved at: what cost rules judged. */
  estimatedCostUsd: number;
  /** The reasons of the require_approval verdict (each names its policy and rule). */
  reasons: DecisionReason[];
  messages?: ChatMessage[];
  /** The tools the request offers the model and its tool_choice, as they would be sent (single read only). */
  tools?: unknown[];
  toolChoice?: unknown;
}

export interface Approval {
  id: string;
  orgId: string;
  status: ApprovalStatus;
  invocationId: string;
  sessionId: string;
  agentId: string | null;
  /** The policy whose require_approval rule asked (the strictest when several did). */
  policyId: string;
  /** The org's policy_version the verdict was decided under. */
  policyVersion: number;
  /** SHA-256 (hex) of the request that will run: the resumed invocation runs only if it still matches. */
  requestDigest: string;
  summary: ApprovalSummary;
  requestedBy: Actor;
  approversRequired: number;
  votes: ApprovalVote[];
  createdAt: Date;
  expiresAt: Date;
  resolvedAt: Date | null;
}

export const isResolved = (approval: Pick<Approval, 'status'>): boolean => approval.status !== 'pending';

/**
 * An approval past its time is expired from that moment, as it reads, though the job or sweep that
 * records it (and denies its invocation) may not have run yet (no worker up).
 */
export const approvalAsOf = (approval: Approval, now: Date): Approval =>
  isOverdue(approval, now) ? { ...approval, status: 'expired' } : approval;

/** Pending past its time: expired from `expires_at` on, whatever has recorded it yet. */
export const isOverdue = (approval: Pick<Approval, 'status' | 'expiresAt'>, at: Date): boolean =>
  approval.status === 'pending' && approval.expiresAt.getTime() <= at.getTime();
