import type { Knex } from '@mikro-orm/knex';

/** Sealed events between two vacuums of audit_outbox: about half a second of a busy service. */
export const VACUUM_AFTER_EVENTS = 1_000;

/**
 * audit_outbox is a queue: every event is inserted, then deleted by a seal a fraction of a second
 * later, so its live rows are few and its dead ones pile up at thousands a second. Autovacuum
 * visits a database at most once a minute (autovacuum_naptime), by which time each seal's scans
 * walk a minute of dead rows: 25–40 ms a seal under load, five seals a second. So the seal job
 * vacuums the table itself, once it has sealed VACUUM_AFTER_EVENTS since the last time.
 *
 * SKIP_LOCKED: a vacuum already running (another worker's, autovacuum's) is enough.
 * TRUNCATE false: giving the emptied pages back needs an exclusive lock that would stall every
 * writer for a moment; the pages are reused instead.
 */
export class OutboxVacuum {
  private sealed = 0;

  constructor(
    private readonly knex: Knex,
    private readonly afterEvents = VACUUM_AFTER_EVENTS,
  ) {}

  /** Counts `count` more sealed events; vacuums once enough were. */
  async afterSealing(count: number): Promise<boolean> {
    this.sealed += count;
    if (this.sealed < this.afterEvents) return false;
    this.sealed = 0;
    await this.knex.raw('vacuum (skip_locked, truncate false) audit_outbox');
    return true;
  }
}
