import type { Approval } from '../domain/approvals/approval';
import type { Actor, AuditEntry } from '../domain/audit/audit-event';
import type { Policy } from '../domain/policy/policy';
import { policyDocument } from '../domain/policy/policy-document';
import type { VerifyResult } from '../domain/audit/hash-chain';
import type { Agent, ApiKey, Credential, Org, User } from '../domain/model';
import type { InvocationSummary } from '../domain/invocations/invocation';
import type { Decision } from '../domain/policy/decision';
import type { ShadowReason } from '../domain/policy/policy';
import type { DecisionReason } from '../domain/policy/verdict';
import type { ChatMessage } from '../domain/providers';
import type { HistoryItem } from '../domain/invocations/invocation-store';
import { microsToUsd, type Price } from '../domain/pricing/cost';
import type { SessionView } from '../domain/sessions/session-use-cases';
import type { UsageFigures, UsageReport } from '../domain/stats/usage-stats';

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export const presentKey = (key: ApiKey, lastUsed?: Date) => ({
  id: key.id,
  name: key.name,
  prefix: key.prefix,
  scopes: key.scopes,
  created_at: key.createdAt.toISOString(),
  expires_at: key.expiresAt.toISOString(),
  last_used_at: iso(lastUsed && (!key.lastUsedAt || lastUsed > key.lastUsedAt) ? lastUsed : key.lastUsedAt),
  revoked_at: iso(key.revokedAt),
});

export const presentOrg = (org: Org) => ({
  id: org.id,
  name: org.name,
  created_at: org.createdAt.toISOString(),
});

export const presentUser = (user: User) => ({
  id: user.id,
  email: user.email,
  name: user.name,
  role: user.role,
});

export const presentAuditEntry = (e: AuditEntry) => ({
  id: e.id,
  seq: e.seq,
  at: e.at.toISOString(),
  actor: e.actor,
  action: e.action,
  resource: e.resource,
  outcome: e.outcome,
  details: e.details,
  request_id: e.requestId,
  prev_hash: e.prevHash,
  hash: e.hash,
});

export const presentVerification = (r: VerifyResult) => ({
  valid: r.valid,
  entries_checked: r.entriesChecked,
  head: r.head,
  first_broken_seq: r.firstBrokenSeq,
});

export const presentCredential = (c: Credential) => ({
  credential_ref: c.ref,
  name: c.name,
  provider: c.provider,
  base_url: c.baseUrl,
  secret_hint: c.secretHint,
  version: c.version,
  created_at: c.createdAt.toISOString(),
  rotated_at: iso(c.rotatedAt),
});

export const presentAgent = (a: Agent) => ({
  id: a.id,
  name: a.name,
  description: a.description,
  owner: a.owner,
  allowed_models: a.allowedModels,
  tools: a.tools,
  credential_refs: a.credentialRefs,
  metadata: a.metadata,
  status: a.status,
  version: a.version,
  created_at: a.createdAt.toISOString(),
  updated_at: a.updatedAt.toISOString(),
});

export const presentPrice = (p: Price) => ({
  model: p.model,
  input_per_mtok_usd: microsToUsd(p.inputMicrosPerMtok),
  output_per_mtok_usd: microsToUsd(p.outputMicrosPerMtok),
  source: p.source,
});

export const presentSession = ({ session: s, reserved }: SessionView) => ({
  id: s.id,
  agent_id: s.agentId,
  status: s.status,
  limits: {
    max_cost_usd: microsToUsd(s.limits.maxCostMicros),
    max_calls: s.limits.maxCalls,
    max_tokens: s.limits.maxTokens,
  },
  usage: {
    cost_usd: microsToUsd(s.usage.costMicros),
    reserved_usd: microsToUsd(reserved.costMicros),
    calls: s.usage.calls,
    input_tokens: s.usage.inputTokens,
    output_tokens: s.usage.outputTokens,
  },
  metadata: s.metadata,
  created_at: s.createdAt.toISOString(),
  expires_at: s.expiresAt.toISOString(),
  closed_at: iso(s.closedAt),
});

const presentReason = (r: DecisionReason) => ({
  policy_id: r.policyId,
  code: r.code,
  message: r.message,
  rule_index: r.ruleIndex ?? null,
});
const presentReasons = (reasons: DecisionReason[]) => reasons.map(presentReason);
const presentShadowReasons = (reasons: ShadowReason[]) =>
  reasons.map((r) => ({ ...presentReason(r), verdict: r.verdict }));

export const presentInvocation = (i: InvocationSummary) => ({
  id: i.id,
  session_id: i.sessionId,
  agent_id: i.agentId,
  status: i.status,
  model: i.model,
  provider: i.provider,
  credential_ref: i.credentialRef,
  decision: i.decision
    ? { id: i.decision.id, verdict: i.decision.verdict, reasons: presentReasons(i.decision.reasons) }
    : null,
  approval_id: i.approvalId,
  output: i.output
    ? {
        role: i.output.role,
        content: i.output.content,
        ...(i.output.toolCalls ? { tool_calls: i.output.toolCalls } : {}),
      }
    : null,
  usage: i.usage ? { input_tokens: i.usage.inputTokens, output_tokens: i.usage.outputTokens } : null,
  cost_usd: microsToUsd(i.costMicros),
  error: i.error ? { error_code: i.error.errorCode, message: i.error.message } : null,
  created_at: i.createdAt.toISOString(),
  updated_at: i.updatedAt.toISOString(),
  completed_at: iso(i.completedAt),
});

export const presentDecision = (d: Decision) => ({
  id: d.id,
  verdict: d.verdict,
  reasons: presentReasons(d.reasons),
  shadow_reasons: presentShadowReasons(d.shadowReasons),
  modified_action: d.modifiedAction ?? null,
  policy_version: d.policyVersion,
  action_digest: d.actionDigest,
  invocation_id: d.invocationId,
  agent_id: d.agentId,
  session_id: d.sessionId,
  evaluated_at: d.evaluatedAt.toISOString(),
});

export const presentHistoryItem = (item: HistoryItem) =>
  item.invocation
    ? {
        type: 'invocation' as const,
        at: item.at.toISOString(),
        invocation: presentInvocation(item.invocation),
      }
    : {
        type: 'decision' as const,
        at: item.at.toISOString(),
        decision: presentDecision(item.decision as Decision),
      };

const presentFigures = (f: UsageFigures) => ({
  calls: f.calls,
  succeeded: f.succeeded,
  failed: f.failed,
  denied: f.denied,
  cancelled: f.cancelled,
  input_tokens: f.inputTokens,
  output_tokens: f.outputTokens,
  cost_usd: microsToUsd(f.costMicros),
});

export const presentUsage = (r: UsageReport) => ({
  from: r.from.toISOString(),
  to: r.to.toISOString(),
  totals: presentFigures(r.totals),
  groups: r.groups.map((g) => ({ key: g.key, ...presentFigures(g) })),
  groups_truncated: r.groupsTruncated,
});

/** A policy in the contract's shape, with the org's policy_version (after a change, or when read). */
export const presentPolicy = (p: Policy, policyVersion: number) => ({
  ...policyDocument(p),
  policy_version: policyVersion,
});

const presentActor = (a: Actor) => ({ type: a.type, id: a.id });

/** A message in the Chat Completions wire shape. */
const presentMessage = (m: ChatMessage) => ({
  role: m.role,
  content: m.content,
  ...(m.toolCalls ? { tool_calls: m.toolCalls } : {}),
  ...(m.toolCallId !== undefined ? { tool_call_id: m.toolCallId } : {}),
});

/** An approval; the summary's messages only when the approval was read on its own. */
export const presentApproval = (a: Approval) => ({
  id: a.id,
  status: a.status,
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
    reasons: presentReasons(a.summary.reasons),
    ...(a.summary.messages ? { messages: a.summary.messages.map(presentMessage) } : {}),
    ...(a.summary.tools ? { tools: a.summary.tools } : {}),
    ...(a.summary.toolChoice !== undefined ? { tool_choice: a.summary.toolChoice } : {}),
  },
  requested_by: presentActor(a.requestedBy),
  approvers_required: a.approversRequired,
  votes: a.votes.map((v) => ({
    by: presentActor(v.by),
    decision: v.decision,
    comment: v.comment,
    at: v.at.toISOString(),
  })),
  created_at: a.createdAt.toISOString(),
  expires_at: a.expiresAt.toISOString(),
  resolved_at: iso(a.resolvedAt),
});
