import type { Clock } from '../clock';
import type { DeliveryStore } from './webhook-store.port';

const DAY_MS = 86_400_000;
/** Rows per statement: each batch is a short transaction, whatever the backlog. */
export const PRUNE_BATCH = 1000;

export interface PruneDeps {
  deliveries: Pick<DeliveryStore, 'deleteEndedBefore'>;
  clock: Clock;
  /** How long a delivery stays listed after it was created (CP_WEBHOOK_DELIVERY_RETENTION_DAYS). */
  retentionDays: number;
}

/**
 * The `webhooks.prune` job: deletes the deliveries that ended (delivered or failed) and were
 * created longer than the retention ago. Every invocation an org's webhook hears of adds a row,
 * so without it the table grows with every invoke. A pending one stays until it ends (its 24
 * hours of retries are shorter than the shortest retention). Returns how many it deleted.
 */
export async function pruneDeliveries(deps: PruneDeps): Promise<number> {
  const before = new Date(deps.clock.now().getTime() - deps.retentionDays * DAY_MS);
  let deleted = 0;
  for (;;) {
    const batch = await deps.deliveries.deleteEndedBefore(before, PRUNE_BATCH);
    deleted += batch;
    if (batch < PRUNE_BATCH) return deleted;
  }
}
