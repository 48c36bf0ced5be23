import { Migration } from '@mikro-orm/migrations';

/**
 * Marks the key an org's signup returned to the person who signed up: approvals take it for that
 * person (a request made with it cannot be approved by their dashboard session). Signup made the
 * org's owner, their key named "bootstrap" and the key's creator link in one instant, so existing
 * rows are found by all three.
 */
export class Migration20261128000006KeyHeldByCreator extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table api_keys add column held_by_creator boolean not null default false');
    this.addSql(`
      update api_keys k set held_by_creator = true
      from users u
      where u.id = k.created_by and u.org_id = k.org_id and u.role = 'owner'
        and k.name = 'bootstrap' and k.created_at = u.created_at`);
  }

  override async down(): Promise<void> {
    this.addSql('alter table api_keys drop column held_by_creator');
  }
}
