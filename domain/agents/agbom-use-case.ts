import type { AgentDeps } from './agent-use-cases';
import { notFound } from '../errors';
import type { CallContext } from '../principal';
import { agbomContentHash, buildAgbom, type AgbomInput } from './agbom';

/**
 * The agent's bill of materials. Its content (agent, models, tools, credential refs, policies,
 * models used) is hashed; the stored state bumps the BOM version and serial only when that hash
 * changes, so asking twice for an unchanged agent returns the same document.
 */
export async function getAgbom(deps: AgentDeps, ctx: CallContext, agentId: string) {
  const orgId = ctx.principal.orgId;
  return deps.uow.transaction(async (tx) => {
    const agent = await tx.agents.get(orgId, agentId);
    if (!agent) throw notFound('agent');
    const known = new Map(
      (await tx.credentials.findByRefs(orgId, agent.credentialRefs)).map((c) => [c.ref, c]),
    );
    const input: AgbomInput = {
      agent,
      orgId,
      credentials: agent.credentialRefs.map((ref) => {
        const c = known.get(ref);
        return {
          ref,
          name: c?.name ?? null,
          provider: c?.provider ?? null,
          baseUrl: c?.baseUrl ?? null,
          deleted: !c || c.deletedAt !== null,
        };
      }),
      policies: await tx.activity.policiesFor(agent),
      modelsUsed: await tx.activity.modelsUsedBy(orgId, agent.id),
    };
    const state = await tx.agbomStates.record(orgId, agent.id, agbomContentHash(input), deps.clock.now());
    return buildAgbom(input, state);
  });
}
