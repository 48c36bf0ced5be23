import { storeError } from './stored-error';
import type { Invocation } from '../../domain/invocations/invocation';
import { statusesOf } from '../../domain/invocations/lifecycle';
import type { DecidedInsert, DecisionWrite, FinishWrite } from '../../domain/invocations/invocation-store';
import { storeDecision, storeOutput, storeRequest } from './invocation-rows';

/** The JSON rows the batched write statements read with json_to_recordset (invocation-sql.ts). */

export const insertJson = (i: Invocation) => ({
  id: i.id,
  org_id: i.orgId,
  session_id: i.sessionId,
  agent_id: i.agentId,
  requested_by_type: i.requestedBy.type,
  requested_by: i.requestedBy.id,
  model: i.model,
  provider: i.provider,
  credential_ref: i.credentialRef,
  request: storeRequest(i.request),
  input_price_micros: i.price.inputMicrosPerMtok,
  output_price_micros: i.price.outputMicrosPerMtok,
  reserve_micros: i.reservation.costMicros,
  reserve_tokens: i.reservation.tokens,
  request_id: i.requestId,
  created_at: i.createdAt,
});

/**
 * An invocation decided before it was recorded: as decided (a modify verdict's request and
 * reservation), with the versions it was decided on.
 */
export const insertDecidedJson = ({
  invocation: i,
  write: w,
  policyVersion,
  agentVersion,
  credentialVersion,
}: DecidedInsert) => ({
  ...insertJson(i),
  policy_version: policyVersion,
  agent_version: agentVersion,
  credential_version: credentialVersion,
  status: w.status,
  ...(w.request ? { request: storeRequest(w.request) } : {}),
  reserve_micros: w.reservation?.costMicros ?? i.reservation.costMicros,
  reserve_tokens: w.reservation?.tokens ?? i.reservation.tokens,
  decision: storeDecision(w.decision),
  error: w.error ? storeError(w.error) : null,
  approval_id: w.approval?.id ?? null,
  decided_at: w.at,
});

export const decideJson = (w: DecisionWrite) => ({
  invocation_id: w.invocationId,
  expected: statusesOf('invocation.evaluate'),
  status: w.status,
  request: w.request ? storeRequest(w.request) : null,
  reserve_micros: w.reservation?.costMicros ?? null,
  reserve_tokens: w.reservation?.tokens ?? null,
  decision: storeDecision(w.decision),
  error: w.error ? storeError(w.error) : null,
  approval_id: w.approval?.id ?? null,
  at: w.at,
});

export const finishJson = (w: FinishWrite) => ({
  invocation_id: w.invocationId,
  from_statuses: w.from,
  status: w.status,
  output: w.output ? storeOutput(w.output) : null,
  input_tokens: w.usage?.inputTokens ?? null,
  output_tokens: w.usage?.outputTokens ?? null,
  cost_micros: w.costMicros,
  charged_calls: w.chargedCalls,
  provider_attempt: w.providerAttempt,
  // A failed attempt before a retry is in its audit entry; the row shows an error only once it ends.
  error: w.error && w.status !== 'running' ? storeError(w.error) : null,
  at: w.at,
});
