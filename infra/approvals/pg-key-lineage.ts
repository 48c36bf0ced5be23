import type { Knex } from '@mikro-orm/knex';
import type { Actor } from '../../domain/audit/audit-event';
import type { KeyLink, LineageSource } from '../../domain/approvals/voter-lineage';

/**
 * Walks back from the given ids through the org's keys: to the key each one replaced (a rotation)
 * and to whoever minted it. People and unknown ids end the walk; `union` ends a cycle.
 */
const LINKS = `
  with recursive reach(id) as (
    select unnest(?::text[])
    union
    select step.id from reach cross join lateral (
      select k.created_by as id from api_keys k
      where k.org_id = ? and k.id = reach.id and k.created_by is not null
      union all
      select p.id from api_keys p where p.org_id = ? and p.replaced_by = reach.id
    ) step
  )
  select k.id, k.created_by, k.held_by_creator,
    (select p.id from api_keys p where p.org_id = k.org_id and p.replaced_by = k.id limit 1) as replaced
  from reach join api_keys k on k.id = reach.id and k.org_id = ?`;

/** The key links behind voters and requesters, from PostgreSQL (one statement per vote). */
export class PgKeyLineage implements LineageSource {
  constructor(private readonly knex: Knex) {}

  async linksOf(orgId: string, actors: readonly Actor[]): Promise<KeyLink[]> {
    const ids = [...new Set(actors.filter((a) => a.type !== 'system').map((a) => a.id))];
    const { rows } = (await this.knex.raw(LINKS, [ids, orgId, orgId, orgId])) as {
      rows: { id: string; created_by: string | null; replaced: string | null; held_by_creator: boolean }[];
    };
    return rows.map((r) => ({
      id: r.id,
      createdBy: r.created_by,
      replaced: r.replaced,
      heldByCreator: r.held_by_creator,
    }));
  }
}
