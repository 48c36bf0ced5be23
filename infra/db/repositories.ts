import type { EntityManager } from '@mikro-orm/postgresql';
import type { AuditEvent } from '../../domain/audit/audit-event';
import { LockMode } from '@mikro-orm/core';
import type { AgbomState, Agent, ApiKey, Credential, Page, PageRequest } from '../../domain/model';
import type { ModelUse, Tx } from '../../domain/ports';
import {
  AgentSchema,
  ApiKeySchema,
  CredentialSchema,
  ModelPriceSchema,
  AuditOutboxSchema,
  InviteSchema,
  OrgSchema,
  UserSchema,
  UserSessionSchema,
} from './entities';
import { policiesFor, policyRepository } from '../policy/pg-policy-repository';

/** Keyset pagination on time-ordered ids: newest first, `after` is the last id already seen. */
async function pageBy<T>(
  key: keyof T & string,
  find: (where: object, limit: number) => Promise<T[]>,
  orgId: string,
  page: PageRequest,
): Promise<Page<T>> {
  const where = page.after ? { orgId, [key]: { $lt: page.after } } : { orgId };
  const rows = await find(where, page.limit + 1);
  const items = rows.slice(0, page.limit);
  const last = items.at(-1);
  return { items, nextAfter: rows.length > page.limit && last ? String(last[key]) : null };
}

const toOutboxRow = (e: AuditEvent) => ({
  id: e.id,
  orgId: e.orgId,
  at: e.at,
  actorType: e.actor.type,
  actorId: e.actor.id,
  action: e.action,
  resourceType: e.resource.type,
  resourceId: e.resource.id,
  outcome: e.outcome,
  details: e.details,
  requestId: e.requestId,
});

/**
 * One statement, safe under concurrent readers: the version goes up only when the content hash
 * changed, and two readers seeing the same new content bump it once.
 */
async function recordAgbomState(
  em: EntityManager,
  orgId: string,
  agentId: string,
  contentHash: string,
  at: Date,
): Promise<AgbomState> {
  const rows: { content_hash: string; bom_version: number; changed_at: Date | string }[] = await em.execute(
    `insert into agbom_states (agent_id, org_id, content_hash, bom_version, changed_at)
     values (?, ?, ?, 1, ?)
     on conflict (agent_id) do update
       set content_hash = excluded.content_hash,
           bom_version = agbom_states.bom_version + 1,
           changed_at = excluded.changed_at
       where agbom_states.content_hash <> excluded.content_hash
     returning content_hash, bom_version, changed_at`,
    [agentId, orgId, contentHash, at],
  );
  const row =
    rows[0] ??
    (
      await em.execute(`select content_hash, bom_version, changed_at from agbom_states where agent_id = ?`, [
        agentId,
      ])
    )[0];
  if (!row) throw new Error(`agbom state of ${agentId} vanished during its upsert`);
  return {
    agentId,
    orgId,
    contentHash: row.content_hash,
    bomVersion: Number(row.bom_version),
    changedAt: new Date(row.changed_at),
  };
}

/** Models an agent has called through the plane: invocations that reached the provider. */
/**
 * The (model, provider) pairs an agent's calls reached a provider with. It walks the agent's index
 * from one distinct pair to the next instead of reading every invocation the agent made (about 10
 * ms against 145 for 300,000 of them), then keeps the pairs with a charged call.
 */
const MODELS_USED = `
  with recursive pairs(model, provider) as (
    (select model, provider from invocations where agent_id = ? order by model, provider limit 1)
    union all
    select next.model, next.provider from pairs cross join lateral (
      select i.model, i.provider from invocations i
      where i.agent_id = ? and (i.model, i.provider) > (pairs.model, pairs.provider)
      order by i.model, i.provider limit 1
    ) next
  )
  select model, provider from pairs where exists (
    select 1 from invocations i
    where i.agent_id = ? and i.org_id = ? and i.model = pairs.model and i.provider = pairs.provider
      and i.charged_calls > 0
  ) order by model, provider`;

const modelsUsedBy = (em: EntityManager, orgId: string, agentId: string): Promise<ModelUse[]> =>
  em.execute(MODELS_USED, [agentId, agentId, agentId, orgId]);

/** Live credentials (a secret still sealed) whose associated data predates `aadVersion`. */
const sealedWithAadBefore = (aadVersion: number) => ({
  aadVersion: { $lt: aadVersion },
  sealedSecret: { $ne: null },
});

/**
 * The domain's repositories over one MikroORM EntityManager. Entities loaded through it are
 * tracked, so `update` only marks them; everything is written when the transaction flushes.
 */
export function repositoriesFor(em: EntityManager): Tx {
  return {
    orgs: {
      add: (org) => void em.persist(em.create(OrgSchema, org)),
      get: (id) => em.findOne(OrgSchema, { id }),
    },
    users: {
      add: (user) => void em.persist(em.create(UserSchema, user)),
      findByEmail: (email) => em.findOne(UserSchema, { email }),
      get: (orgId, id) => em.findOne(UserSchema, { orgId, id }),
      replacePasswordHash: async (orgId, id, from, to) =>
        (await em.nativeUpdate(UserSchema, { orgId, id, passwordHash: from }, { passwordHash: to })) > 0,
    },
    keys: {
      add: (key) => void em.persist(em.create(ApiKeySchema, key)),
      get: (orgId, id) => em.findOne(ApiKeySchema, { orgId, id }),
      getForUpdate: (orgId, id) =>
        em.findOne(ApiKeySchema, { orgId, id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true }),
      list: (orgId, page) =>
        pageBy<ApiKey>(
          'id',
          (where, limit) => em.find(ApiKeySchema, where, { orderBy: { id: 'desc' }, limit }),
          orgId,
          page,
        ),
      update: (key) => void em.persist(key),
    },
    userSessions: {
      add: (session) => void em.persist(em.create(UserSessionSchema, session)),
      get: (orgId, id) => em.findOne(UserSessionSchema, { orgId, id }),
      update: (session) => void em.persist(session),
    },
    invites: {
      add: (invite) => void em.persist(em.create(InviteSchema, invite)),
      findByTokenHash: (tokenHash) => em.findOne(InviteSchema, { tokenHash }),
      update: (invite) => void em.persist(invite),
    },
    credentials: {
      add: (credential) => void em.persist(em.create(CredentialSchema, credential)),
      get: (orgId, ref) => em.findOne(CredentialSchema, { orgId, ref, deletedAt: null }),
      getForUpdate: (orgId, ref) =>
        em.findOne(
          CredentialSchema,
          { orgId, ref, deletedAt: null },
          { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true },
        ),
      findByRefs: (orgId, refs) =>
        refs.length === 0 ? Promise.resolve([]) : em.find(CredentialSchema, { orgId, ref: { $in: refs } }),
      list: (orgId, page) =>
        pageBy<Credential>(
          'ref',
          (where, limit) =>
            em.find(CredentialSchema, { ...where, deletedAt: null }, { orderBy: { ref: 'desc' }, limit }),
          orgId,
          page,
        ),
      sealedUnderOtherKeys: (keyId, limit) =>
        em.find(
          CredentialSchema,
          { keyId: { $ne: keyId }, sealedSecret: { $ne: null } },
          { limit, orderBy: { ref: 'asc' }, lockMode: LockMode.PESSIMISTIC_PARTIAL_WRITE },
        ),
      sealedWithOlderAad: (aadVersion, afterRef, limit) =>
        em.find(
          CredentialSchema,
          { ...sealedWithAadBefore(aadVersion), ref: { $gt: afterRef } },
          { limit, orderBy: { ref: 'asc' }, lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true },
        ),
      anySealedWithOlderAad: async (aadVersion) =>
        (await em.count(CredentialSchema, sealedWithAadBefore(aadVersion))) > 0,
      update: (credential) => void em.persist(credential),
    },
    agents: {
      add: (agent) => void em.persist(em.create(AgentSchema, agent)),
      get: (orgId, id) => em.findOne(AgentSchema, { orgId, id }),
      getForUpdate: (orgId, id) =>
        em.findOne(AgentSchema, { orgId, id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true }),
      list: (orgId, page) =>
        pageBy<Agent>(
          'id',
          (where, limit) => em.find(AgentSchema, where, { orderBy: { id: 'desc' }, limit }),
          orgId,
          page,
        ),
      update: (agent) => void em.persist(agent),
    },
    prices: {
      list: (orgId) => em.find(ModelPriceSchema, { orgId }, { orderBy: { model: 'asc' } }),
      get: (orgId, model) => em.findOne(ModelPriceSchema, { orgId, model }),
      put: async (price) => void (await em.upsert(ModelPriceSchema, price)),
      countLocked: async (orgId) => {
        // `no key update`: the lock queues this org's additions without blocking rows that refer to it.
        await em.execute('select 1 from orgs where id = ? for no key update', [orgId]);
        return em.count(ModelPriceSchema, { orgId });
      },
      delete: async (orgId, model) => (await em.nativeDelete(ModelPriceSchema, { orgId, model })) > 0,
    },
    agbomStates: {
      record: (orgId, agentId, contentHash, at) => recordAgbomState(em, orgId, agentId, contentHash, at),
    },
    policies: policyRepository(em),
    activity: {
      policiesFor: (agent) => policiesFor(em, agent.orgId, agent.id),
      modelsUsedBy: (orgId, agentId) => modelsUsedBy(em, orgId, agentId),
    },
    audit: {
      record: (event) => void em.persist(em.create(AuditOutboxSchema, toOutboxRow(event))),
    },
  };
}
