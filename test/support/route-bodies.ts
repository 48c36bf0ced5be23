import { PASSWORD } from './factories';

/**
 * A minimal valid body for every route that reads one (keyed `METHOD /path`), so a request is
 * refused for the one thing a test changes, not for its body. Ids in them need not exist.
 */
export const VALID_BODIES: Record<string, unknown> = {
  'POST /v1/orgs/signup': { org_name: 'matrix', email: 'matrix-owner@example.test', password: PASSWORD },
  'POST /v1/auth/signup': { email: 'matrix-user@example.test', password: PASSWORD, invite_token: 'cit_x' },
  'POST /v1/auth/login': { email: 'matrix-owner@example.test', password: PASSWORD },
  'POST /v1/keys': { name: 'matrix', scopes: ['read'] },
  'POST /v1/keys/{id}/rotate': { grace_seconds: 0 },
  'POST /v1/orgs/invites': { email: 'matrix@example.test', role: 'viewer' },
  'POST /v1/credentials': { name: 'matrix', provider: 'mock', secret: 'mock-secret' },
  'POST /v1/credentials/{ref}/rotate': { secret: 'mock-secret-2' },
  'POST /v1/agents': { name: 'matrix' },
  'PATCH /v1/agents/{id}': { name: 'matrix-2' },
  'PUT /v1/pricing/{model}': { input_per_mtok_usd: 1, output_per_mtok_usd: 2 },
  'POST /v1/policies': { name: 'matrix', priority: 1, rules: [{ type: 'max_tokens', limit: 100 }] },
  'PUT /v1/policies/{id}': { name: 'matrix', priority: 1, rules: [{ type: 'max_tokens', limit: 100 }] },
  'POST /v1/policies/preview': {
    policy: { name: 'matrix', rules: [{ type: 'max_tokens', limit: 100 }] },
    since: '2020-01-01T00:00:00Z',
  },
  'POST /v1/approvals/{id}/approve': { comment: 'matrix' },
  'POST /v1/approvals/{id}/reject': { comment: 'matrix' },
  'POST /v1/webhooks': { url: 'https://hooks.example.com/cp', events: ['approval.requested'] },
  'POST /v1/sessions': { max_cost_usd: 1 },
  // An unknown session answers 404 before anything is queued: no test waits on a guardian worker.
  'POST /v1/acs/evaluate': {
    session_id: 'ses_doesnotexist',
    action: { type: 'llm.invoke', model: 'gpt-4o-mini' },
  },
  // No X-Session-Id: refused with 400 before anything is written.
  'POST /v1/chat/completions': {
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 8,
  },
  'POST /v1/llm/invoke': {
    session_id: 'ses_doesnotexist',
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 8,
  },
};
