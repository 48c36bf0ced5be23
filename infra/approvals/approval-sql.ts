/**
 * Approvals as one JSON parameter (rows of approval-rows.ts `approvalJson`), for the guardian's
 * DECIDE statement, which opens an approval with the decision that asks for it.
 */
export const INSERT_APPROVALS = `insert into approvals (id, org_id, invocation_id, session_id, agent_id,
  policy_id, policy_version, request_digest, summary, requested_by_type, requested_by,
  approvers_required, status, created_at, expires_at)`;

export const approvalRecordset = (param: string): string => `json_to_recordset(${param}::json) as p(
  id text, org_id text, invocation_id text, session_id text, agent_id text, policy_id text,
  policy_version integer, request_digest text, summary jsonb, requested_by_type text,
  requested_by text, approvers_required integer, status text, created_at timestamptz,
  expires_at timestamptz)`;

/**
 * An approval with its votes (oldest first) and, on request, what its invocation would send
 * besides the summary: its messages, the tools it offers and its tool_choice.
 */
export const approvalSelect = (withMessages: boolean): string => `
  select ap.*,
    coalesce((
      select json_agg(json_build_object('voter_type', v.voter_type, 'voter_id', v.voter_id,
        'decision', v.decision, 'comment', v.comment, 'at', v.at) order by v.at, v.voter_id)
      from approval_votes v where v.approval_id = ap.id
    ), '[]'::json) as votes
    ${withMessages ? `, i.request -> 'messages' as messages, i.request -> 'tools' as tools, i.request -> 'tool_choice' as tool_choice` : ''}
  from approvals ap
    ${withMessages ? 'left join invocations i on i.id = ap.invocation_id' : ''}`;
