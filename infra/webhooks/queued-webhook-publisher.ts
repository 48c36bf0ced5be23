import { JOBS } from '../../domain/jobs';
import { fanOut, plannedDeliveries, type FanOutDeps } from '../../domain/webhooks/fan-out-event';
import type { WebhookEventType, WebhookPublisher } from '../../domain/webhooks/webhook-publisher';
import type { DeliveryQueue, Subscription } from '../../domain/webhooks/webhook-store.port';
import type { Logger } from '../logger';
import type { JobQueues } from '../queue/job-queues';

/**
 * The waits before trying again to look up an org's webhooks or store an event's deliveries (a
 * dropped connection, a failover): about 15 s in all. The state change the event tells of is
 * already committed, so giving up loses the event.
 */
const RETRY_DELAYS_MS = [200, 1_000, 3_000, 10_000];

/** How long an org found without webhooks is taken to have none: its events cost nothing meanwhile. */
const NO_WEBHOOKS_TTL_MS = 1_000;
/** Past this many remembered orgs, expired entries are dropped. */
const MAX_REMEMBERED = 10_000;

/** Each delivery is one `webhook.deliver` job whose id is the delivery id. */
export const deliveryJobs = (queues: JobQueues): DeliveryQueue => {
  const queue = () => queues.queue(JOBS['webhook.deliver'].queue);
  return {
    enqueue: (d) => queues.enqueue('webhook.deliver', { delivery_id: d.id, org_id: d.orgId }, d.id),
    has: async (id) => (await queue().getJob(id)) !== undefined,
    wake: async (ids) => {
      const jobs = await Promise.all(ids.map((id) => queue().getJob(id)));
      // A job already running or waiting is not delayed, and promote() refuses it: nothing to do.
      await Promise.all(jobs.map((job) => job?.promote().catch(() => undefined)));
    },
  };
};

/** A look-up of an org's webhooks: shared while in flight, kept briefly when it found none. */
interface Lookup {
  subscriptions: Promise<Subscription[]>;
  until: number;
  none: boolean;
}

/**
 * Publishes in the background: the caller (the invoke path among others) never waits on the
 * database or Redis for it, and a failure is logged, never thrown. Looking up the org's webhooks
 * and storing the deliveries are tried again for a while (RETRY_DELAYS_MS). Events of an org
 * found without webhooks are dropped without a query for a second, so a webhook created meanwhile
 * receives events at most a second later.
 */
export class QueuedWebhookPublisher implements WebhookPublisher {
  private readonly lookups = new Map<string, Lookup>();

  constructor(
    private readonly deps: FanOutDeps,
    private readonly logger: Logger,
  ) {}

  publish(orgId: string, type: WebhookEventType, data: Record<string, unknown>): void {
    const now = this.deps.clock.now().getTime();
    let lookup = this.lookups.get(orgId);
    if (lookup && lookup.until <= now) lookup = undefined;
    if (lookup?.none) return;
    this.handOn(orgId, type, data, lookup ?? this.lookUp(orgId, now)).catch((err: unknown) =>
      this.logger.error({ err, org_id: orgId, type }, 'webhook event not handed on'),
    );
  }

  private async handOn(orgId: string, type: WebhookEventType, data: Record<string, unknown>, lookup: Lookup) {
    // The look-up may be shared with other events; a failed one is made again for this one.
    const subscriptions = await lookup.subscriptions.catch(() =>
      this.retrying(() => this.deps.deliveries.subscriptions(orgId)),
    );
    const deliveries = plannedDeliveries(this.deps.clock, subscriptions, orgId, type, data);
    await this.retrying(() => fanOut(this.deps, deliveries));
  }

  /** `attempt`, tried again after each of RETRY_DELAYS_MS while it fails. */
  private async retrying<T>(attempt: () => Promise<T>): Promise<T> {
    for (const delayMs of RETRY_DELAYS_MS) {
      try {
        return await attempt();
      } catch (err) {
        this.logger.warn({ err, retry_in_ms: delayMs }, 'webhook event: not handed on yet; trying again');
        await new Promise((resolve) => setTimeout(resolve, delayMs).unref());
      }
    }
    return attempt();
  }

  private lookUp(orgId: string, now: number): Lookup {
    if (this.lookups.size >= MAX_REMEMBERED)
      for (const [org, old] of this.lookups) if (old.until <= now) this.lookups.delete(org);
    const lookup: Lookup = {
      subscriptions: this.deps.deliveries.subscriptions(orgId),
      until: now + NO_WEBHOOKS_TTL_MS,
      none: false,
    };
    this.lookups.set(orgId, lookup);
    const forget = () => {
      if (this.lookups.get(orgId) === lookup) this.lookups.delete(orgId);
    };
    // Only "none" is remembered: an org with webhooks is looked up afresh for its next event.
    lookup.subscriptions.then((found) => (found.length === 0 ? (lookup.none = true) : forget()), forget);
    return lookup;
  }
}
