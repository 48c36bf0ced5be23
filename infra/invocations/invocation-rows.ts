import { loadError, type StoredError } from './stored-error';
import type { ActorType } from '../../domain/audit/audit-event';
import type {
  DecisionSummary,
  Invocation,
  InvocationOutput,
  InvocationRequest,
  InvocationStatus,
} from '../../domain/invocations/invocation';
import { withoutPromptText, type Decision } from '../../domain/policy/decision';
import type { ShadowReason } from '../../domain/policy/policy';
import type { DecisionReason, Verdict } from '../../domain/policy/verdict';
import type { ChatMessage, FinishReason, Provider, ToolCall } from '../../domain/providers';
import { toDate, toDateOrNull, type Num, type Time } from '../db/row-values';

type Json<T> = T | null;

export interface InvocationRow {
  id: string;
  org_id: string;
  session_id: string;
  agent_id: string | null;
  requested_by_type: string;
  requested_by: string;
  status: string;
  model: string;
  provider: string;
  credential_ref: string;
  request: StoredRequest;
  input_price_micros: Num;
  output_price_micros: Num;
  reserve_micros: Num;
  reserve_tokens: Num;
  decision: Json<StoredDecision>;
  approval_id: string | null;
  output: Json<StoredOutput>;
  input_tokens: Num | null;
  output_tokens: Num | null;
  cost_micros: Num;
  charged_calls: Num;
  provider_attempts: Num;
  error: Json<StoredError>;
  request_id: string | null;
  created_at: Time;
  updated_at: Time;
  completed_at: Time | null;
}

/** A message as stored: the Chat Completions wire shape. */
export interface StoredMessage {
  role: ChatMessage['role'];
  content: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
}

/** The request as stored (snake_case, like the API that took it). */
export interface StoredRequest {
  messages: StoredMessage[];
  max_tokens: number;
  temperature?: number;
  tool?: { name: string; arguments: unknown };
  tools?: unknown[];
  tool_choice?: unknown;
  stream?: boolean;
  metadata?: Record<string, unknown>;
}

export interface StoredOutput {
  role: 'assistant';
  content: string;
  tool_calls?: ToolCall[];
  finish_reason?: FinishReason;
}

export const storeMessage = (m: ChatMessage): StoredMessage => ({
  role: m.role,
  content: m.content,
  ...(m.toolCalls ? { tool_calls: m.toolCalls } : {}),
  ...(m.toolCallId !== undefined ? { tool_call_id: m.toolCallId } : {}),
});

export const loadMessage = (m: StoredMessage): ChatMessage => ({
  role: m.role,
  content: m.content,
  ...(m.tool_calls ? { toolCalls: m.tool_calls } : {}),
  ...(m.tool_call_id !== undefined ? { toolCallId: m.tool_call_id } : {}),
});

export const storeOutput = (o: InvocationOutput): StoredOutput => ({
  role: o.role,
  content: o.content,
  ...(o.toolCalls ? { tool_calls: o.toolCalls } : {}),
  ...(o.finishReason ? { finish_reason: o.finishReason } : {}),
});

const loadOutput = (o: StoredOutput): InvocationOutput => ({
  role: o.role,
  content: o.content,
  ...(o.tool_calls ? { toolCalls: o.tool_calls } : {}),
  ...(o.finish_reason ? { finishReason: o.finish_reason } : {}),
});

export interface StoredReason {
  policy_id: string | null;
  code: string;
  message: string;
  /** Absent on reasons stored before rules were indexed. */
  rule_index?: number | null;
}

interface StoredShadowReason extends StoredReason {
  verdict: Verdict;
}

interface StoredDecision {
  id: string;
  verdict: Verdict;
  reasons: StoredReason[];
}

export const storeRequest = (r: InvocationRequest): StoredRequest => ({
  messages: r.messages.map(storeMessage),
  max_tokens: r.maxTokens,
  ...(r.temperature !== undefined ? { temperature: r.temperature } : {}),
  ...(r.tool ? { tool: r.tool } : {}),
  ...(r.tools ? { tools: r.tools } : {}),
  ...(r.toolChoice !== undefined ? { tool_choice: r.toolChoice } : {}),
  ...(r.stream ? { stream: true } : {}),
  ...(r.metadata ? { metadata: r.metadata } : {}),
});

const loadRequest = (r: StoredRequest): InvocationRequest => ({
  messages: r.messages.map(loadMessage),
  maxTokens: r.max_tokens,
  ...(r.temperature !== undefined ? { temperature: r.temperature } : {}),
  ...(r.tool ? { tool: r.tool } : {}),
  ...(r.tools ? { tools: r.tools } : {}),
  ...(r.tool_choice !== undefined ? { toolChoice: r.tool_choice } : {}),
  ...(r.stream ? { stream: true } : {}),
  ...(r.metadata ? { metadata: r.metadata } : {}),
});

const storeReason = (r: DecisionReason): StoredReason => ({
  policy_id: r.policyId,
  code: r.code,
  message: r.message,
  rule_index: r.ruleIndex ?? null,
});

const loadReason = (r: StoredReason) => ({
  policyId: r.policy_id,
  code: r.code,
  message: r.message,
  ruleIndex: r.rule_index ?? null,
});

export const storeReasons = (reasons: DecisionReason[]): StoredReason[] => reasons.map(storeReason);

export const loadReasons = (reasons: StoredReason[]): DecisionReason[] => reasons.map(loadReason);

const storeShadowReasons = (reasons: ShadowReason[]): StoredShadowReason[] =>
  reasons.map((r) => ({ ...storeReason(r), verdict: r.verdict }));

const loadShadowReasons = (reasons: StoredShadowReason[]): ShadowReason[] =>
  reasons.map((r) => ({ ...loadReason(r), verdict: r.verdict }));

export const storeDecision = (d: DecisionSummary): StoredDecision => ({
  id: d.id,
  verdict: d.verdict,
  reasons: storeReasons(d.reasons),
});

/** The columns of what an invocation was charged, so far. */
export type ChargedColumns = Pick<
  InvocationRow,
  'input_tokens' | 'output_tokens' | 'cost_micros' | 'charged_calls' | 'provider_attempts'
>;

/** What an invocation was charged, as its row reads (its usage, cost, calls and attempts). */
export const chargedOf = (r: ChargedColumns) => ({
  usage:
    r.input_tokens === null || r.output_tokens === null
      ? null
      : { inputTokens: Number(r.input_tokens), outputTokens: Number(r.output_tokens) },
  costMicros: Number(r.cost_micros),
  chargedCalls: Number(r.charged_calls),
  providerAttempts: Number(r.provider_attempts),
});

export const toInvocation = (r: InvocationRow): Invocation => ({
  id: r.id,
  orgId: r.org_id,
  sessionId: r.session_id,
  agentId: r.agent_id,
  requestedBy: { type: r.requested_by_type as ActorType, id: r.requested_by },
  status: r.status as InvocationStatus,
  model: r.model,
  provider: r.provider as Provider,
  credentialRef: r.credential_ref,
  request: loadRequest(r.request),
  price: {
    inputMicrosPerMtok: Number(r.input_price_micros),
    outputMicrosPerMtok: Number(r.output_price_micros),
  },
  reservation: { costMicros: Number(r.reserve_micros), tokens: Number(r.reserve_tokens) },
  decision: r.decision
    ? { id: r.decision.id, verdict: r.decision.verdict, reasons: loadReasons(r.decision.reasons) }
    : null,
  approvalId: r.approval_id,
  output: r.output ? loadOutput(r.output) : null,
  ...chargedOf(r),
  error: r.error ? loadError(r.error) : null,
  requestId: r.request_id,
  createdAt: toDate(r.created_at),
  updatedAt: toDate(r.updated_at),
  completedAt: toDateOrNull(r.completed_at),
});

export interface DecisionRow {
  id: string;
  org_id: string;
  invocation_id: string | null;
  session_id: string | null;
  agent_id: string | null;
  verdict: string;
  reasons: StoredReason[];
  shadow_reasons: StoredShadowReason[];
  modified_action: unknown;
  policy_version: Num;
  action_digest: string | null;
  evaluated_at: Time;
}

export const toDecision = (r: DecisionRow): Decision => ({
  id: r.id,
  orgId: r.org_id,
  invocationId: r.invocation_id,
  sessionId: r.session_id,
  agentId: r.agent_id,
  verdict: r.verdict as Verdict,
  reasons: loadReasons(r.reasons),
  shadowReasons: loadShadowReasons(r.shadow_reasons ?? []),
  modifiedAction: r.modified_action ?? null,
  policyVersion: Number(r.policy_version),
  actionDigest: r.action_digest ?? null,
  evaluatedAt: toDate(r.evaluated_at),
});

export const decisionJson = (d: Decision) => ({
  id: d.id,
  org_id: d.orgId,
  invocation_id: d.invocationId,
  session_id: d.sessionId,
  agent_id: d.agentId,
  verdict: d.verdict,
  reasons: storeReasons(d.reasons),
  shadow_reasons: storeShadowReasons(d.shadowReasons),
  // The prompt text never reaches the log, whoever built the decision.
  modified_action: withoutPromptText(d.modifiedAction),
  policy_version: d.policyVersion,
  action_digest: d.actionDigest,
  evaluated_at: d.evaluatedAt,
});
