import type { Knex } from '@mikro-orm/knex';
import type { Checkpoint } from '../../domain/audit/checkpoint';
import type { CheckpointStore, Resigned } from '../../domain/audit/checkpoint-store';
import { toCheckpoint, type CheckpointRow } from './pg-audit-log';
import type { RedisSignedHeads } from './redis-signed-heads';

/**
 * Checkpoints in audit_checkpoints and the signed heads in Redis, for re-signing after a master
 * key rotation. The table's trigger lets an UPDATE change a row's key id and signature and nothing
 * else (migration CheckpointResign).
 */
export class PgCheckpointStore implements CheckpointStore {
  constructor(
    private readonly knex: Knex,
    private readonly signedHeads: RedisSignedHeads,
  ) {}

  async signedUnderOtherKeys(
    keyId: string,
    after: { orgId: string; seq: number } | null,
    limit: number,
  ): Promise<Checkpoint[]> {
    const query = this.knex<CheckpointRow>('audit_checkpoints').whereNot({ key_id: keyId });
    if (after) query.andWhereRaw('(org_id, seq) > (?, ?)', [after.orgId, after.seq]);
    const rows: CheckpointRow[] = await query.orderBy([{ column: 'org_id' }, { column: 'seq' }]).limit(limit);
    return rows.map(toCheckpoint);
  }

  /** One transaction per batch; a row another run (or a tamperer) changed meanwhile is left alone. */
  replaceSignatures(changes: Resigned[]): Promise<number> {
    return this.knex.transaction(async (trx) => {
      let replaced = 0;
      for (const { from, to } of changes)
        replaced += await trx('audit_checkpoints')
          .where({ org_id: from.orgId, seq: from.seq, key_id: from.keyId, signature: from.signature })
          .update({ key_id: to.keyId, signature: to.signature });
      return replaced;
    });
  }

  async orgsAfter(after: string, limit: number): Promise<string[]> {
    const rows: { org_id: string }[] = await this.knex('audit_heads')
      .where('org_id', '>', after)
      .orderBy('org_id')
      .limit(limit)
      .select('org_id');
    return rows.map((r) => r.org_id);
  }

  signedHead(orgId: string): Promise<Checkpoint | null> {
    return this.signedHeads.get(orgId);
  }

  replaceSignedHead({ from, to }: Resigned): Promise<boolean> {
    return this.signedHeads.replaceSignature(from, to);
  }
}
