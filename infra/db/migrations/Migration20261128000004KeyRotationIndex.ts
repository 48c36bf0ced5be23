import { Migration } from '@mikro-orm/migrations';

/** A vote walks a key's rotation line backwards (which key did this one replace?), by `replaced_by`. */
export class Migration20261128000004KeyRotationIndex extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      'create index api_keys_replaced_by_idx on api_keys (org_id, replaced_by) where replaced_by is not null',
    );
  }

  override async down(): Promise<void> {
    this.addSql('drop index api_keys_replaced_by_idx');
  }
}
