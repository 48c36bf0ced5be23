import { Migration } from '@mikro-orm/migrations';

/**
 * Lets `npm run master-key:reseal` sign a checkpoint again under the new master key, so the old
 * key can be dropped: an UPDATE may give a row another key id and signature, nothing else. Its
 * org, seq and hash (what verify anchors the chain to) stay append-only, and DELETE stays
 * refused. A row whose signature was swapped for one the service cannot check fails verify, as
 * a relabelled one always did.
 */
export class Migration20261125000001CheckpointResign extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create function audit_checkpoints_resign_only() returns trigger language plpgsql as $$
      begin
        if new.org_id = old.org_id and new.seq = old.seq and new.hash = old.hash and new.at = old.at
          and new.key_id <> old.key_id then
          return new;
        end if;
        raise exception '% is append-only: % refused (only a re-signature under another key may change a row)',
          tg_table_name, tg_op using errcode = 'insufficient_privilege';
      end
      $$;
      drop trigger audit_checkpoints_no_update_delete on audit_checkpoints;
      create trigger audit_checkpoints_no_delete before delete on audit_checkpoints
        for each row execute function audit_entries_refuse_change();
      create trigger audit_checkpoints_resign_only before update on audit_checkpoints
        for each row execute function audit_checkpoints_resign_only();
    `);
  }
}
