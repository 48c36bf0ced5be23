import type { HttpClient, HttpResult } from './http-client';
import { mintKey } from './factories';
import {
  eventually,
  finished,
  invoke,
  openSession,
  type InvocationBody,
  type InvokeSetup,
} from './invoke-fixtures';

/** An approval as the API presents it. */
export interface ApprovalBody {
  id: string;
  status: string;
  invocation_id: string;
  session_id: string;
  agent_id: string | null;
  policy_id: string;
  policy_version: number;
  request_digest: string;
  summary: {
    model: string;
    max_tokens: number;
    tool: { name: string; arguments: unknown } | null;
    estimated_cost_usd: number;
    reasons: { policy_id: string | null; code: string }[];
    messages?: { role: string; content: string }[];
    tools?: unknown[];
    tool_choice?: unknown;
  };
  requested_by: { type: string; id: string };
  approvers_required: number;
  votes: { by: { type: string; id: string }; decision: string; comment: string | null; at: string }[];
  created_at: string;
  expires_at: string;
  resolved_at: string | null;
}

/** A policy asking for approval of every invoke of `model`. */
export async function requireApproval(
  http: HttpClient,
  adminKey: string,
  options: { model: string; approversRequired?: number; timeoutSeconds?: number; extraRules?: unknown[] },
): Promise<string> {
  const res = await http.post<{ id: string }>(
    '/v1/policies',
    {
      name: `approve ${options.model}`,
      rules: [
        {
          type: 'require_approval',
          when: { models: [options.model] },
          approvers_required: options.approversRequired ?? 1,
          timeout_seconds: options.timeoutSeconds ?? 3600,
        },
        ...(options.extraRules ?? []),
      ],
    },
    adminKey,
  );
  if (res.status !== 201) throw new Error(`policy: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.id;
}

/** Keys that may vote (policies:write), each a distinct identity. */
export async function approverKeys(http: HttpClient, adminKey: string, count: number): Promise<string[]> {
  const keys: string[] = [];
  for (let i = 0; i < count; i++)
    keys.push((await mintKey(http, adminKey, ['policies:read', 'policies:write'], `approver ${i}`)).key);
  return keys;
}

/** Submits an invoke (no wait) and waits until it pauses for approval; returns both. */
export async function pausedInvoke(
  http: HttpClient,
  token: string,
  body: Record<string, unknown>,
): Promise<{ invocation: InvocationBody; approval: ApprovalBody }> {
  const res = await invoke(http, token, body, 0);
  if (res.status !== 202) throw new Error(`invoke: ${res.status} ${JSON.stringify(res.body)}`);
  const invocation = await eventually(async () => {
    const got = await http.get<InvocationBody>(`/v1/llm/invocations/${res.body.id}`, token);
    return got.body.status === 'awaiting_approval' ? got.body : null;
  });
  const approval = await http.get<ApprovalBody>(`/v1/approvals/${invocation.approval_id}`, token);
  if (approval.status !== 200)
    throw new Error(`approval: ${approval.status} ${JSON.stringify(approval.body)}`);
  return { invocation, approval: approval.body };
}

export const vote = (
  http: HttpClient,
  token: string,
  approvalId: string,
  decision: 'approve' | 'reject',
  comment?: string,
): Promise<HttpResult<ApprovalBody & { error_code?: string }>> =>
  http.post(`/v1/approvals/${approvalId}/${decision}`, comment === undefined ? {} : { comment }, token);

export async function sessionFor(http: HttpClient, setup: InvokeSetup, maxCostUsd = 1) {
  return openSession(http, setup.org.adminKey, { agent_id: setup.agentId, max_cost_usd: maxCostUsd });
}

export { finished };
