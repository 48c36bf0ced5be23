import { Migration } from '@mikro-orm/migrations';

/**
 * An invocation's request (the prompt) and its output are the large values of the invoke path.
 * Past about 2 KB PostgreSQL compresses a value, and its default method, pglz, is slow: on the
 * 2-core machine it took about 650 µs of the server's CPU per 17 KB prompt, lz4 about 70 (lz4
 * stores more bytes: 8.3 KB against 4.2 KB for that prose). Set only where the server was built
 * with lz4; it applies to values written from now on, and older ones stay readable as they are.
 */
export class Migration20261128000002Lz4Compression extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      do $$ begin
        if exists (select 1 from pg_settings
                   where name = 'default_toast_compression' and 'lz4' = any (enumvals)) then
          alter table invocations
            alter column request set compression lz4,
            alter column output set compression lz4;
        end if;
      end $$`);
  }

  override async down(): Promise<void> {
    this.addSql(`
      alter table invocations
        alter column request set compression default,
        alter column output set compression default`);
  }
}
