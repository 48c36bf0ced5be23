import type { Actor } from '../audit/audit-event';
import type { Decision } from './decision';
import type { AgentGate } from './guardian';
import type { Action } from './policy';
import type { ChatMessage } from '../providers';

/** A `POST /v1/acs/evaluate` on its way to the guardian queue: the job payload carries only its id. */
export interface EvaluationRequest {
  id: string;
  orgId: string;
  agentId: string | null;
  sessionId: string | null;
  /** The agent record as the API read it when it checked the agent exists (not read twice). */
  agent: AgentGate | null;
  action: Action;
  requestedBy: Actor;
  requestId: string | null;
}

/**
 * How a worker's claim went: taken now; taken `again` (an earlier attempt of the same job took it
 * and did not answer: crashed, or its write failed); or refused (null: withdrawn by the API, or
 * answered, or expired).
 */
export type Claim = 'taken' | 'again' | null;

/**
 * Hands an evaluation from the API to a guardian worker and its answer back. Requests and answers
 * hold prompt text, so they live briefly (minutes) outside the job payload and the database.
 * A decision is recorded only by the worker that claimed its request, and the API withdraws a
 * request nobody claimed when it stops waiting: claim and withdrawal exclude each other, so a
 * caller told 503 has nothing recorded under its evaluation.
 */
export interface EvaluationRelay {
  put(request: EvaluationRequest): Promise<void>;
  /** The request, claimed or not (a retried job reads the one it claimed). */
  request(id: string): Promise<EvaluationRequest | null>;
  /** Takes the request before its decision is recorded; refused once it was withdrawn. */
  claim(id: string): Promise<Claim>;
  /** Deletes the request unless a worker claimed it: true when it was deleted (and can never be claimed). */
  withdraw(id: string): Promise<boolean>;
  answer(id: string, decision: Decision): Promise<void>;
  answered(id: string): Promise<Decision | null>;
}

/** A message as Chat Completions spells it: what an evaluate takes, it answers (QA). */
const messageJson = (m: ChatMessage) => ({
  role: m.role,
  content: m.content,
  ...(m.toolCalls !== undefined ? { tool_calls: m.toolCalls } : {}),
  ...(m.toolCallId !== undefined ? { tool_call_id: m.toolCallId } : {}),
});

/** An action as the contract spells it (snake_case): what the digest is taken of and what callers see. */
export const actionJson = (a: Action) => ({
  type: a.type,
  ...(a.model !== undefined ? { model: a.model } : {}),
  ...(a.messages !== undefined ? { messages: a.messages.map(messageJson) } : {}),
  ...(a.maxTokens !== undefined ? { max_tokens: a.maxTokens } : {}),
  ...(a.tool !== undefined ? { tool: a.tool } : {}),
  // Only an invoke offering tools has these (their definitions, as Chat Completions `tools`), so
  // digests of every other action are unchanged.
  ...(a.offeredTools?.length ? { tools: a.offeredTools } : {}),
  ...(a.toolChoice !== undefined ? { tool_choice: a.toolChoice } : {}),
  ...(a.estimatedCostUsd !== undefined ? { estimated_cost_usd: a.estimatedCostUsd } : {}),
});
