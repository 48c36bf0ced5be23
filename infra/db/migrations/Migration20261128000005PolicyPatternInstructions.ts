import { Migration } from '@mikro-orm/migrations';

/**
 * What each policy's patterns compile to (instructions), counted when the policy is written: a
 * write checks the org's pattern limit by summing these instead of compiling every enabled
 * pattern of the org again. Rows written before stay null and are counted when read.
 */
export class Migration20261128000005PolicyPatternInstructions extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table policies add column pattern_instructions integer');
  }

  override async down(): Promise<void> {
    this.addSql('alter table policies drop column pattern_instructions');
  }
}
