import type { EntityManager } from '@mikro-orm/postgresql';
import type { PolicyRef } from '../../domain/ports';
import type { PolicyRepository } from '../../domain/policy/policy-store.port';
import { POLICY_COLUMNS, policyValues, toPolicy, type PolicyRow } from './policy-rows';

async function versionOf(em: EntityManager, sql: string, orgId: string): Promise<number> {
  const rows: { policy_version: string | number }[] = await em.execute(sql, [orgId]);
  const row = rows[0];
  if (!row) throw new Error(`org ${orgId} has no row to hold its policy_version`);
  return Number(row.policy_version);
}

/** Policies through the unit of work's EntityManager, so they commit with its audit events. */
export function policyRepository(em: EntityManager): PolicyRepository {
  return {
    lockVersion: (orgId) => versionOf(em, 'select policy_version from orgs where id = ? for update', orgId),
    // One statement both locks the org row and bumps: concurrent writers queue behind it.
    bumpVersion: (orgId) =>
      versionOf(
        em,
        'update orgs set policy_version = policy_version + 1 where id = ? returning policy_version',
        orgId,
      ),
    get: async (orgId, id) => {
      const rows: PolicyRow[] = await em.execute(
        `select ${POLICY_COLUMNS} from policies where org_id = ? and id = ? and deleted_at is null`,
        [orgId, id],
      );
      return rows[0] ? toPolicy(rows[0]) : null;
    },
    list: async (orgId, page) => {
      const after = page.after ? 'and id < ?' : '';
      const rows: PolicyRow[] = await em.execute(
        `select ${POLICY_COLUMNS} from policies where org_id = ? and deleted_at is null ${after}
         order by id desc limit ?`,
        page.after ? [orgId, page.after, page.limit + 1] : [orgId, page.limit + 1],
      );
      const items = rows.slice(0, page.limit).map(toPolicy);
      return { items, nextAfter: rows.length > page.limit ? (items.at(-1)?.id ?? null) : null };
    },
    countLive: async (orgId) => {
      const rows: { n: string }[] = await em.execute(
        'select count(*) as n from policies where org_id = ? and deleted_at is null',
        [orgId],
      );
      return Number(rows[0]?.n ?? 0);
    },
    insert: async (p) => {
      await em.execute(
        `insert into policies (name, description, enabled, priority, mode, applies_to, rules, version,
           updated_at, id, org_id, created_at)
         values (?, ?, ?, ?, ?, ?::jsonb, ?::jsonb, ?, ?, ?, ?, ?)`,
        [...policyValues(p), p.id, p.orgId, p.createdAt],
      );
    },
    replace: async (p) => {
      await em.execute(
        `update policies set name = ?, description = ?, enabled = ?, priority = ?, mode = ?,
           applies_to = ?::jsonb, rules = ?::jsonb, version = ?, updated_at = ?
         where org_id = ? and id = ? and deleted_at is null`,
        [...policyValues(p), p.orgId, p.id],
      );
    },
    markDeleted: async (orgId, id, at) => {
      await em.execute(
        'update policies set deleted_at = ? where org_id = ? and id = ? and deleted_at is null',
        [at, orgId, id],
      );
    },
  };
}

/** Enabled live policies that apply to the agent: no agent list, or one that names it. */
export async function policiesFor(em: EntityManager, orgId: string, agentId: string): Promise<PolicyRef[]> {
  const rows: Pick<PolicyRow, 'id' | 'name' | 'version' | 'mode'>[] = await em.execute(
    `select id, name, version, mode from policies
     where org_id = ? and deleted_at is null and enabled
       and (applies_to->'agentIds' is null or applies_to->'agentIds' @> jsonb_build_array(?::text))
     order by id`,
    [orgId, agentId],
  );
  return rows.map((r) => ({ id: r.id, name: r.name, version: Number(r.version), mode: r.mode }));
}
