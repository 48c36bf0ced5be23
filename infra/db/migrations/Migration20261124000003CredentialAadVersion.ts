import { Migration } from '@mikro-orm/migrations';

/**
 * Which associated data a credential's secret was sealed with. Rows from before are 1 (org and
 * ref only) and are resealed to 2 (provider, base_url and version bound too) when the service
 * starts, which holds the master key a migration does not; until then they do not open. The
 * default stays 1: a row written by a replica still on the previous release is what it says.
 */
export class Migration20261124000003CredentialAadVersion extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table credentials add column aad_version smallint not null default 1;`);
  }
}
