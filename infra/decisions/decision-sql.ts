/**
 * Decisions as one JSON parameter (rows of invocation-rows.ts `decisionJson`), for statements that
 * insert them beside what they decide: `${INSERT_DECISIONS} select * from ${decisionRecordset('$2')}`
 * (or '?' under knex).
 */
export const INSERT_DECISIONS = `insert into decisions (id, org_id, invocation_id, session_id, agent_id, verdict,
  reasons, shadow_reasons, modified_action, policy_version, action_digest, evaluated_at)`;

export const decisionRecordset = (param: string): string => `json_to_recordset(${param}::json) as d(
  id text, org_id text, invocation_id text, session_id text, agent_id text, verdict text, reasons jsonb,
  shadow_reasons jsonb, modified_action jsonb, policy_version integer, action_digest text,
  evaluated_at timestamptz)`;
