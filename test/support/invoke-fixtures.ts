import type { HttpClient, HttpResult } from './http-client';
import type { TestApp } from './test-app';
import { signupOrg, type SignedUpOrg } from './factories';

/** An invocation as the API presents it. */
export interface InvocationBody {
  id: string;
  session_id: string;
  agent_id: string | null;
  status: string;
  model: string;
  provider: string;
  credential_ref: string;
  decision: {
    id: string;
    verdict: string;
    reasons: { policy_id: string | null; code: string; message: string }[];
  } | null;
  approval_id: string | null;
  output: { role: string; content: string } | null;
  usage: { input_tokens: number; output_tokens: number } | null;
  cost_usd: number;
  error: { error_code: string; message: string } | null;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
}

export interface SessionBody {
  id: string;
  agent_id: string | null;
  status: string;
  limits: { max_cost_usd: number; max_calls: number | null; max_tokens: number | null };
  usage: {
    cost_usd: number;
    reserved_usd: number;
    calls: number;
    input_tokens: number;
    output_tokens: number;
  };
  metadata: Record<string, unknown>;
  created_at: string;
  expires_at: string;
  closed_at: string | null;
}

/** An org ready to invoke: a credential, an agent allowed `models` with it, and prices for them. */
export interface InvokeSetup {
  org: SignedUpOrg;
  credentialRef: string;
  agentId: string;
}

export interface SetupOptions {
  /** The credential: the mock provider by default, or an OpenAI-compatible base URL (a stub). */
  baseUrl?: string;
  models?: string[];
  /** USD per million tokens, for every model. */
  price?: { input: number; output: number };
}

export async function setUpInvoking(http: HttpClient, options: SetupOptions = {}): Promise<InvokeSetup> {
  const org = await signupOrg(http);
  const models = options.models ?? ['mock-1'];
  const credential = await http.post<{ credential_ref: string }>(
    '/v1/credentials',
    options.baseUrl
      ? {
          name: 'stub',
          provider: 'openai_compatible',
          secret: 'sk-stub-secret-0001',
          base_url: options.baseUrl,
        }
      : { name: 'mock', provider: 'mock', secret: 'mock-secret-0001' },
    org.adminKey,
  );
  if (credential.status !== 201) throw new Error(`credential: ${JSON.stringify(credential.body)}`);
  const agent = await http.post<{ id: string }>(
    '/v1/agents',
    { name: 'agent', allowed_models: models, credential_refs: [credential.body.credential_ref] },
    org.adminKey,
  );
  if (agent.status !== 201) throw new Error(`agent: ${JSON.stringify(agent.body)}`);
  const price = options.price ?? { input: 1, output: 2 };
  for (const model of models) {
    const res = await http.call('PUT', `/v1/pricing/${encodeURIComponent(model)}`, {
      token: org.adminKey,
      body: { input_per_mtok_usd: price.input, output_per_mtok_usd: price.output },
    });
    if (res.status !== 200) throw new Error(`price: ${JSON.stringify(res.body)}`);
  }
  return { org, credentialRef: credential.body.credential_ref, agentId: agent.body.id };
}

export async function openSession(
  http: HttpClient,
  token: string,
  body: Record<string, unknown>,
): Promise<SessionBody> {
  const res = await http.post<SessionBody>('/v1/sessions', body, token);
  if (res.status !== 201) throw new Error(`session: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

export const invokeBody = (sessionId: string, extra: Record<string, unknown> = {}) => ({
  session_id: sessionId,
  model: 'mock-1',
  messages: [{ role: 'user', content: 'hello' }],
  max_tokens: 16,
  ...extra,
});

/** POST /v1/llm/invoke, waiting up to `wait` seconds. */
export const invoke = (
  http: HttpClient,
  token: string,
  body: Record<string, unknown>,
  wait = 10,
): Promise<HttpResult<InvocationBody>> =>
  http.post<InvocationBody>(`/v1/llm/invoke${wait ? `?wait=${wait}` : ''}`, body, token);

const FINISHED = ['succeeded', 'failed', 'denied', 'cancelled'];

/** Long-polls an invocation until it finishes (or `timeoutMs` passes). */
export async function finished(
  http: HttpClient,
  token: string,
  id: string,
  timeoutMs = 20_000,
): Promise<InvocationBody> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await http.get<InvocationBody>(`/v1/llm/invocations/${id}?wait=5`, token);
    if (res.status !== 200) throw new Error(`get ${id}: ${res.status} ${JSON.stringify(res.body)}`);
    if (FINISHED.includes(res.body.status)) return res.body;
    if (Date.now() > deadline) throw new Error(`${id} still ${res.body.status} after ${timeoutMs} ms`);
  }
}

export { eventually } from './eventually';

/** Moves a session's expiry into the past, as time would (no sweeper has run). */
export const expireSession = (app: TestApp, sessionId: string) =>
  app.infra
    .knex('sessions')
    .where({ id: sessionId })
    .update({ expires_at: new Date(Date.now() - 1000) });
