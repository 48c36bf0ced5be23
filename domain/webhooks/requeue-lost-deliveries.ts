import type { Clock } from '../clock';
import type { DeliveryQueue, DeliveryStore } from './webhook-store.port';

/**
 * A pending delivery always has a live job (waiting, delayed for a retry, or running), except when
 * the process died between writing its row and enqueueing it, Redis lost the job, or the job
 * failed for good without ending the delivery (a worker killed mid-run too often, the database
 * down through every attempt). Past this age such a delivery is taken as lost: the feed adds the
 * job within milliseconds of writing the row.
 */
export const LOST_AFTER_MS = 2 * 60_000;
const PAGE = 500;

export interface RequeueDeps {
  deliveries: Pick<DeliveryStore, 'pendingBefore'>;
  queue: DeliveryQueue;
  clock: Clock;
}

/**
 * The `webhooks.sweep` job: enqueues again every pending delivery with no job, so each event is
 * still delivered (at least once: receivers drop repeats by `webhook-id`). Returns how many.
 */
export async function requeueLostDeliveries(deps: RequeueDeps): Promise<number> {
  const before = new Date(deps.clock.now().getTime() - LOST_AFTER_MS);
  let requeued = 0;
  let after: string | null = null;
  for (;;) {
    const page = await deps.deliveries.pendingBefore(before, after, PAGE);
    // Asked all at once: a page waits for one round trip, not one per delivery (after a long
    // Redis outage there may be thousands).
    const queued = await Promise.all(page.map((delivery) => deps.queue.has(delivery.id)));
    for (const [i, delivery] of page.entries()) {
      if (queued[i]) continue;
      await deps.queue.requeue(delivery);
      requeued++;
    }
    if (page.length < PAGE) return requeued;
    after = page[page.length - 1]!.id;
  }
}
