import type { EntityManager } from '@mikro-orm/postgresql';
import type { PolicyRef } from '../../domain/ports';
import type { Rule } from '../../domain/policy/policy';
import type { PolicyRepository, StoredPatterns } from '../../domain/policy/policy-store.port';
import { POLICY_COLUMNS, policyValues, toPolicy, type PolicyRow } from './policy-rows';

async function versionOf(em: EntityManager, sql: string, orgId: string): Promise<number> {
  const rows: { policy_version: string | number }[] = await em.execute(sql, [orgId]);
  const row = rows[0];
  if (!row) throw new Error(`org ${orgId} has no row to hold its policy_version`);
  return Number(row.policy_version);
}

type VersionedRow = { policy_version: string | number } & ({ id: null } | PolicyRow);

/**
 * The org's live policies that `tail` selects, each row with the org's policy_version, in one
 * statement: reads run outside a transaction, and two statements could straddle a change. The org
 * row always answers, so no policy is one row with a null id.
 */
const withVersion = (em: EntityManager, orgId: string, tail: string, values: unknown[]) =>
  em.execute<VersionedRow[]>(
    `select o.policy_version, p.* from orgs o left join lateral (
       select ${POLICY_COLUMNS} from policies where org_id = o.id and deleted_at is null ${tail}
     ) p on true where o.id = ? order by p.id desc`,
    [...values, orgId],
  );

const policiesOf = (rows: VersionedRow[]) => rows.flatMap((r) => (r.id === null ? [] : [toPolicy(r)]));

function versionIn(rows: VersionedRow[], orgId: string): number {
  const row = rows[0];
  if (!row) throw new Error(`org ${orgId} has no row to hold its policy_version`);
  return Number(row.policy_version);
}

interface PatternsRow {
  id: string;
  pattern_instructions: number | null;
  rules: Rule[] | null;
  list_items: string;
}

const storedPatterns = (row: PatternsRow): StoredPatterns => {
  const listItems = Number(row.list_items);
  return row.pattern_instructions === null
    ? { id: row.id, listItems, instructions: null, rules: row.rules ?? [] }
    : { id: row.id, listItems, instructions: Number(row.pattern_instructions) };
};

/**
 * The items of every list in a JSON document, the document itself included when it is one
 * (listItemsOf, counted where the rows are). No `?` filter in the path: the driver would take it
 * for a parameter.
 */
const LIST_ITEMS = (column: string) =>
  `(select coalesce(sum(jsonb_array_length(a)), 0) from jsonb_path_query(${column}, 'strict $.**') a
    where jsonb_typeof(a) = 'array')`;

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
    getWithVersion: async (orgId, id) => {
      const rows = await withVersion(em, orgId, 'and id = ?', [id]);
      return { policy: policiesOf(rows)[0] ?? null, policyVersion: versionIn(rows, orgId) };
    },
    list: async (orgId, page) => {
      const after = page.after ? 'and id < ?' : '';
      const rows = await withVersion(em, orgId, `${after} order by id desc limit ?`, [
        ...(page.after ? [page.after] : []),
        page.limit + 1,
      ]);
      const found = policiesOf(rows);
      const items = found.slice(0, page.limit);
      const nextAfter = found.length > page.limit ? (items.at(-1)?.id ?? null) : null;
      return { items, nextAfter, policyVersion: versionIn(rows, orgId) };
    },
    enabledPatterns: async (orgId) => {
      const rows = await em.execute<PatternsRow[]>(
        `select id, pattern_instructions, case when pattern_instructions is null then rules end as rules,
           ${LIST_ITEMS('applies_to')} + ${LIST_ITEMS('rules')} - jsonb_array_length(rules) as list_items
         from policies where org_id = ? and deleted_at is null and enabled`,
        [orgId],
      );
      return rows.map(storedPatterns);
    },
    countLive: async (orgId) => {
      const rows: { n: string }[] = await em.execute(
        'select count(*) as n from policies where org_id = ? and deleted_at is null',
        [orgId],
      );
      return Number(rows[0]?.n ?? 0);
    },
    insert: async (p, patternInstructions) => {
      await em.execute(
        `insert into policies (name, description, enabled, priority, mode, applies_to, rules, version,
           updated_at, pattern_instructions, id, org_id, created_at)
         values (?, ?, ?, ?, ?, ?::jsonb, ?::jsonb, ?, ?, ?, ?, ?, ?)`,
        [...policyValues(p), patternInstructions, p.id, p.orgId, p.createdAt],
      );
    },
    replace: async (p, patternInstructions) => {
      await em.execute(
        `update policies set name = ?, description = ?, enabled = ?, priority = ?, mode = ?,
           applies_to = ?::jsonb, rules = ?::jsonb, version = ?, updated_at = ?, pattern_instructions = ?
         where org_id = ? and id = ? and deleted_at is null`,
        [...policyValues(p), patternInstructions, p.orgId, p.id],
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
