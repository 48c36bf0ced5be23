import { newId } from '../ids';
import type { Invocation, InvocationRequest } from '../invocations/invocation';
import type { ApprovalRequirement } from '../policy/policy';
import type { GuardianVerdict } from '../policy/guardian';
import { microsToUsd } from '../pricing/cost';
import type { Approval } from './approval';
import { requestDigest } from './request-digest';

/** When a verdict asks for approval without saying how (never from the engine): one person, an hour. */
const FALLBACK = { approversRequired: 1, timeoutSeconds: 3600 };

function requirementOf(verdict: GuardianVerdict): ApprovalRequirement {
  if (verdict.approval) return verdict.approval;
  const policyId = verdict.reasons.find((r) => r.policyId)?.policyId ?? 'builtin';
  return { policyId, ...FALLBACK };
}

/**
 * The approval a `require_approval` verdict opens for an invocation: bound to the request that will
 * run (`request`, redacted and clamped) by its digest, and to the policy_version that asked.
 */
export function newApproval(
  invocation: Invocation,
  request: InvocationRequest,
  reserveMicros: number,
  verdict: GuardianVerdict,
  at: Date,
): Approval {
  const asked = requirementOf(verdict);
  return {
    id: newId('apr'),
    orgId: invocation.orgId,
    status: 'pending',
    invocationId: invocation.id,
    sessionId: invocation.sessionId,
    agentId: invocation.agentId,
    policyId: asked.policyId,
    policyVersion: verdict.policyVersion,
    requestDigest: requestDigest(invocation, request),
    summary: {
      model: invocation.model,
      provider: invocation.provider,
      credentialRef: invocation.credentialRef,
      maxTokens: request.maxTokens,
      tool: request.tool ?? null,
      estimatedCostUsd: microsToUsd(reserveMicros),
      reasons: verdict.reasons,
    },
    requestedBy: invocation.requestedBy,
    approversRequired: asked.approversRequired,
    votes: [],
    createdAt: at,
    expiresAt: new Date(at.getTime() + asked.timeoutSeconds * 1000),
    resolvedAt: null,
  };
}
