import { notFound } from '../../domain/errors';
import type { CallContext } from '../../domain/principal';
import { listPrices } from '../../domain/pricing/price-use-cases';
import type { Infra } from '../../infra/container';
import { priceDeps } from '../http/deps';

/** A model as OpenAI's Models API spells it. */
export const modelView = (id: string) => ({
  id,
  object: 'model' as const,
  created: 0,
  owned_by: 'control-plane',
});

/** The session's agent's allowed models; null when the session has no agent (every priced model). */
async function agentModels(infra: Infra, orgId: string, sessionId: string): Promise<string[] | null> {
  const context = await infra.invocations.invokeContext(orgId, {
    sessionId,
    agentId: null,
    credentialRef: null,
    model: '',
  });
  if (!context.session) throw notFound('session');
  return context.agent ? context.agent.allowedModels : null;
}

/**
 * The models `GET /v1/models` lists, sorted: every model with a price (built-in or the org's own),
 * and with a session only those of them its agent may call. A model without a price is refused
 * at every call (`unpriced_model`), so it is not listed even where the agent allows it (QA).
 */
export async function callableModels(
  infra: Infra,
  ctx: CallContext,
  sessionId: string | undefined,
): Promise<string[]> {
  const allowed = sessionId ? await agentModels(infra, ctx.principal.orgId, sessionId) : null;
  const priced = new Set((await listPrices(priceDeps(infra), ctx)).map((p) => p.model));
  const names = allowed ? allowed.filter((model) => priced.has(model)) : [...priced];
  return [...new Set(names)].sort();
}
