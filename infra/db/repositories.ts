import type { EntityManager } from '@mikro-orm/postgresql';
import type { AuditEvent } from '../../domain/audit/audit-event';
import type { ApiKey, Page, PageRequest } from '../../domain/model';
import type { Tx } from '../../domain/ports';
import {
  ApiKeySchema,
  AuditOutboxSchema,
  InviteSchema,
  OrgSchema,
  UserSchema,
  UserSessionSchema,
} from './entities';

/** Keyset pagination on time-ordered ids: newest first, `after` is the last id already seen. */
async function pageById<T extends { id: string }>(
  find: (where: object, limit: number) => Promise<T[]>,
  orgId: string,
  page: PageRequest,
): Promise<Page<T>> {
  const where = page.after ? { orgId, id: { $lt: page.after } } : { orgId };
  const rows = await find(where, page.limit + 1);
  const items = rows.slice(0, page.limit);
  return { items, nextAfter: rows.length > page.limit ? (items.at(-1)?.id ?? null) : null };
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
    },
    keys: {
      add: (key) => void em.persist(em.create(ApiKeySchema, key)),
      get: (orgId, id) => em.findOne(ApiKeySchema, { orgId, id }),
      list: (orgId, page) =>
        pageById<ApiKey>(
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
    audit: {
      record: (event) => void em.persist(em.create(AuditOutboxSchema, toOutboxRow(event))),
    },
  };
}
