import { newAuditEvent } from '../audit/new-event';
import { sameValue } from '../same-value';
import type { Clock } from '../clock';
import { invalidState, notFound, validationError } from '../errors';
import { newId } from '../ids';
import type { Agent, Page, PageRequest } from '../model';
import type { Tx, UnitOfWork } from '../ports';
import { actorOf, type CallContext } from '../principal';

export interface AgentDeps {
  uow: UnitOfWork;
  clock: Clock;
}

/** What a client sets; the rest (id, status, version, times) the service keeps. */
export type AgentFields = Pick<
  Agent,
  'name' | 'description' | 'owner' | 'allowedModels' | 'tools' | 'credentialRefs' | 'metadata'
>;

export type AgentPatch = Partial<AgentFields>;

const recordAgentEvent = (tx: Tx, ctx: CallContext, action: string, agent: Agent, details: object = {}) =>
  tx.audit.record(
    newAuditEvent({
      orgId: agent.orgId,
      actor: actorOf(ctx.principal),
      action,
      resource: { type: 'agent', id: agent.id },
      at: agent.updatedAt,
      requestId: ctx.requestId,
      details: { name: agent.name, version: agent.version, status: agent.status, ...details },
    }),
  );

/** Every ref must name a live credential of the caller's org (another org's refs do not exist). */
async function checkCredentialRefs(tx: Tx, orgId: string, refs: string[]): Promise<void> {
  const live = new Set(
    (await tx.credentials.findByRefs(orgId, refs)).filter((c) => !c.deletedAt).map((c) => c.ref),
  );
  const problems = refs.flatMap((ref, i) =>
    live.has(ref)
      ? []
      : [{ path: `credential_refs.${i}`, message: `credential_refs.${i}: no credential ${ref}` }],
  );
  if (problems.length) throw validationError(problems);
}

export async function createAgent(deps: AgentDeps, ctx: CallContext, fields: AgentFields): Promise<Agent> {
  const now = deps.clock.now();
  const agent: Agent = {
    id: newId('agt'),
    orgId: ctx.principal.orgId,
    ...fields,
    status: 'active',
    version: 1,
    createdAt: now,
    updatedAt: now,
    createdBy: ctx.principal.id,
  };
  await deps.uow.transaction(async (tx) => {
    await checkCredentialRefs(tx, agent.orgId, agent.credentialRefs);
    tx.agents.add(agent);
    recordAgentEvent(tx, ctx, 'agent.created', agent);
  });
  return agent;
}

async function loadAgent(tx: Tx, ctx: CallContext, id: string, forUpdate = false): Promise<Agent> {
  const orgId = ctx.principal.orgId;
  const agent = forUpdate ? await tx.agents.getForUpdate(orgId, id) : await tx.agents.get(orgId, id);
  if (!agent) throw notFound('agent');
  return agent;
}

export const getAgent = (deps: AgentDeps, ctx: CallContext, id: string): Promise<Agent> =>
  deps.uow.read((tx) => loadAgent(tx, ctx, id));

export const listAgents = (deps: AgentDeps, ctx: CallContext, page: PageRequest): Promise<Page<Agent>> =>
  deps.uow.read((tx) => tx.agents.list(ctx.principal.orgId, page));

/** Equal as JSON whatever the key order (jsonb hands objects back with its own order). */
const snakeCase = (field: string): string => field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * Applies the fields given; `version` goes up once per request that changes anything, and a
 * request that changes nothing leaves the agent (and its version) as it was. The row is locked
 * so two concurrent patches each get their own version.
 */
export async function patchAgent(deps: AgentDeps, ctx: CallContext, id: string, patch: AgentPatch) {
  return deps.uow.transaction(async (tx) => {
    const agent = await loadAgent(tx, ctx, id, true);
    const changed = (Object.keys(patch) as (keyof AgentFields)[]).filter(
      (k) => patch[k] !== undefined && !sameValue(agent[k], patch[k]),
    );
    if (changed.length === 0) return agent;
    if (changed.includes('credentialRefs'))
      await checkCredentialRefs(tx, agent.orgId, patch.credentialRefs ?? []);
    Object.assign(agent, Object.fromEntries(changed.map((k) => [k, patch[k]])));
    agent.version += 1;
    agent.updatedAt = deps.clock.now();
    tx.agents.update(agent);
    recordAgentEvent(tx, ctx, 'agent.updated', agent, { changed: changed.map(snakeCase) });
    return agent;
  });
}

/** Suspending stops the agent's new sessions and invokes; suspending twice is an invalid_state. */
export async function setAgentStatus(
  deps: AgentDeps,
  ctx: CallContext,
  id: string,
  status: 'active' | 'suspended',
): Promise<Agent> {
  return deps.uow.transaction(async (tx) => {
    const agent = await loadAgent(tx, ctx, id, true);
    if (agent.status === status) throw invalidState(agent.status, `the agent is already ${agent.status}`);
    agent.status = status;
    agent.version += 1;
    agent.updatedAt = deps.clock.now();
    tx.agents.update(agent);
    recordAgentEvent(tx, ctx, status === 'suspended' ? 'agent.suspended' : 'agent.resumed', agent);
    return agent;
  });
}
