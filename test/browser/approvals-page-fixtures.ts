import { mintKey, PASSWORD, uniqueEmail } from '../support/factories';
import type { HttpClient } from '../support/http-client';
import { openSession, setUpInvoking, type InvokeSetup } from '../support/invoke-fixtures';
import { requireApproval } from '../support/approval-fixtures';

/** Shared by the approver's page tests: the HTTP level one and the browser one. */

export const PAGE_COOKIE = 'cp_approvals_session';
export const GATED_MODEL = 'gated-page-model';

export interface PageUser {
  id: string;
  email: string;
  password: string;
}

/** A person of the org with `role`, through an invite, as people join. */
export async function personWithRole(
  http: HttpClient,
  adminKey: string,
  role: 'approver' | 'viewer' | 'admin',
): Promise<PageUser> {
  const email = uniqueEmail(role);
  const invite = await http.post<{ invite_token: string }>('/v1/orgs/invites', { email, role }, adminKey);
  if (invite.status !== 201) throw new Error(`invite: ${invite.status} ${JSON.stringify(invite.body)}`);
  const joined = await http.post<{ user: { id: string } }>('/v1/auth/signup', {
    email,
    password: PASSWORD,
    name: `${role[0]?.toUpperCase()}${role.slice(1)} Person`,
    invite_token: invite.body.invite_token,
  });
  if (joined.status !== 201) throw new Error(`signup: ${joined.status} ${JSON.stringify(joined.body)}`);
  return { id: joined.body.user.id, email, password: PASSWORD };
}

/** An org whose invokes of GATED_MODEL wait for a person's approval, and an agent key to invoke with. */
export interface GatedOrg {
  setup: InvokeSetup;
  agentKey: string;
  policyId: string;
  sessionId: string;
}

export async function gatedOrg(http: HttpClient): Promise<GatedOrg> {
  const setup = await setUpInvoking(http, { models: ['mock-1', GATED_MODEL] });
  const policyId = await requireApproval(http, setup.org.adminKey, { model: GATED_MODEL });
  const agentKey = (
    await mintKey(http, setup.org.adminKey, ['llm:invoke', 'sessions:read', 'policies:read'], 'agent')
  ).key;
  const session = await openSession(http, setup.org.adminKey, { agent_id: setup.agentId, max_cost_usd: 5 });
  return { setup, agentKey, policyId, sessionId: session.id };
}

export const gatedBody = (sessionId: string, content: string, extra: Record<string, unknown> = {}) => ({
  session_id: sessionId,
  model: GATED_MODEL,
  messages: [{ role: 'user', content }],
  max_tokens: 64,
  ...extra,
});
