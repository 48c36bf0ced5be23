import type { Actor } from '../audit/audit-event';
import type { Decision } from './decision';
import type { AgentGate } from './guardian';
import type { Action } from './policy';

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
 * Hands an evaluation from the API to a guardian worker and its answer back. Requests and answers
 * hold prompt text, so they live briefly (minutes) outside the job payload and the database.
 */
export interface EvaluationRelay {
  put(request: EvaluationRequest): Promise<void>;
  request(id: string): Promise<EvaluationRequest | null>;
  answer(id: string, decision: Decision): Promise<void>;
  answered(id: string): Promise<Decision | null>;
}

/** An action as the contract spells it (snake_case): what the digest is taken of and what callers see. */
export const actionJson = (a: Action) => ({
  type: a.type,
  ...(a.model !== undefined ? { model: a.model } : {}),
  ...(a.messages !== undefined ? { messages: a.messages } : {}),
  ...(a.maxTokens !== undefined ? { max_tokens: a.maxTokens } : {}),
  ...(a.tool !== undefined ? { tool: a.tool } : {}),
  // Only an invoke offering tools has these, so digests of every other action are unchanged.
  ...(a.offeredTools?.length ? { offered_tools: a.offeredTools } : {}),
  ...(a.estimatedCostUsd !== undefined ? { estimated_cost_usd: a.estimatedCostUsd } : {}),
});
