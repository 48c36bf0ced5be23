import type { Knex } from '@mikro-orm/knex';
import type { AuditEvent } from '../../domain/audit/audit-event';
import { GENESIS_HASH, sealEvents } from '../../domain/audit/hash-chain';

/**
 * What someone with database access would write to forge an entry of an org's log (entry 2 unless told): its details
 * changed and every hash after it recomputed, as the chain's own code would.
 */
export async function forgedChain(knex: Knex, orgId: string, forgedSeq = 2) {
  const rows = await knex('audit_entries').where({ org_id: orgId }).orderBy('seq');
  const events: AuditEvent[] = rows.map((r) => ({
    id: r.id,
    orgId: r.org_id,
    at: new Date(r.at),
    actor: { type: r.actor_type, id: r.actor_id },
    action: r.action,
    resource: { type: r.resource_type, id: r.resource_id },
    outcome: r.outcome,
    details: Number(r.seq) === forgedSeq ? { email: 'forged@example.test' } : r.details,
    requestId: r.request_id,
  }));
  return sealEvents({ seq: 0, hash: GENESIS_HASH }, events);
}
