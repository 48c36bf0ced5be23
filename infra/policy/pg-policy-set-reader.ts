import type { Knex } from '@mikro-orm/knex';
import type { PolicySetReader } from '../../domain/policy/compiled-policies';
import type { PolicySet } from '../../domain/policy/policy';
import { POLICY_COLUMNS, toPolicy, type PolicyRow } from './policy-rows';

const prefixed = POLICY_COLUMNS.split(', ')
  .map((c) => `p.${c}`)
  .join(', ');

/**
 * Reads an org's policy set for evaluation. The version and the policies come from one
 * statement, hence one snapshot: a change commits both together, so a set never mixes versions.
 */
export class PgPolicySetReader implements PolicySetReader {
  constructor(private readonly knex: Knex) {}

  async policyVersion(orgId: string): Promise<number> {
    const row: { policy_version: string } | undefined = await this.knex('orgs')
      .select('policy_version')
      .where({ id: orgId })
      .first();
    return Number(row?.policy_version ?? 0);
  }

  /** Enabled and disabled live policies, highest priority first (then oldest first). */
  async loadPolicySet(orgId: string): Promise<PolicySet> {
    const { rows } = (await this.knex.raw(
      `select o.policy_version, ${prefixed} from orgs o
       left join policies p on p.org_id = o.id and p.deleted_at is null
       where o.id = ? order by p.priority desc, p.id`,
      [orgId],
    )) as { rows: (Partial<PolicyRow> & { policy_version: string })[] };
    return {
      orgId,
      policyVersion: Number(rows[0]?.policy_version ?? 0),
      policies: rows.filter((r): r is PolicyRow & { policy_version: string } => r.id != null).map(toPolicy),
    };
  }
}
