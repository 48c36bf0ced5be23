import type { ApprovalStore } from '../approvals/approval-store';
import { approvalEventData } from '../approvals/approval-events';
import type { Clock } from '../clock';
import { newId } from '../ids';
import type { InvocationStore } from '../invocations/invocation-store';
import { finishedData, requestedData } from './event-data';
import { eventOfAction, type WebhookEventType } from './webhook-events';
import type { DeliveryQueue, NewDelivery } from './webhook-store.port';

/** A sealed audit entry, as much of it as a webhook's feed reads. */
export interface LoggedChange {
  seq: number;
  action: string;
  resourceId: string;
}

export interface FedWebhook {
  id: string;
  orgId: string;
  events: WebhookEventType[];
}

/** Makes a webhook's deliveries of the changes it is fed. */
export type PlanDeliveries = (webhook: FedWebhook, changes: LoggedChange[]) => Promise<NewDelivery[]>;

/** Each webhook's place in its org's sealed audit log. */
export interface WebhookFeedStore {
  /** Live webhooks with a sealed entry of their org past their place that tells of an event they subscribe to (or no place yet). */
  behind(): Promise<string[]>;
  /**
   * One step, in one transaction: locks the live webhook (null when it is deleted, or locked by
   * another worker's step), reads up to `limit` entries past its place whose actions tell of the
   * events it subscribes to, stores the deliveries `plan` makes of them, and moves its place past
   * every entry read (to its org's last entry when fewer than `limit` matched). `more` when the
   * step stopped at `limit`.
   */
  advance(
    webhookId: string,
    limit: number,
    plan: PlanDeliveries,
  ): Promise<{ deliveries: NewDelivery[]; more: boolean } | null>;
}

export interface FeedDeps {
  feed: WebhookFeedStore;
  invocations: Pick<InvocationStore, 'getMany'>;
  approvals: Pick<ApprovalStore, 'get'>;
  queue: DeliveryQueue;
  clock: Clock;
  /** Hears a webhook whose step failed; it is fed again from the same place next round. */
  onError(err: unknown, webhookId: string): void;
}

/** Entries read per step. */
const STEP = 200;
/** Webhooks fed at once: each step holds a database connection for a few milliseconds. */
const AT_ONCE = 4;

/** The event's data, from the stored invocation or approval the entry names. */
async function eventData(deps: FeedDeps, orgId: string, changes: { type: WebhookEventType; id: string }[]) {
  const invocationIds = changes.filter((c) => c.type === 'invocation.finished').map((c) => c.id);
  const approvalIds = [...new Set(changes.filter((c) => c.type !== 'invocation.finished').map((c) => c.id))];
  const [invocations, approvals] = await Promise.all([
    invocationIds.length > 0 ? deps.invocations.getMany(invocationIds) : [],
    Promise.all(approvalIds.map((id) => deps.approvals.get(orgId, id, false))),
  ]);
  const byId = new Map<string, Record<string, unknown>>();
  for (const i of invocations) byId.set(`invocation.finished ${i.id}`, finishedData(i));
  for (const a of approvals)
    if (a) {
      byId.set(`approval.requested ${a.id}`, requestedData(a));
      byId.set(`approval.resolved ${a.id}`, approvalEventData(a));
    }
  return (type: WebhookEventType, id: string) => byId.get(`${type} ${id}`);
}

/** One delivery per change the webhook subscribes to, in the log's order. */
export const planDeliveries =
  (deps: FeedDeps): PlanDeliveries =>
  async (webhook, logged) => {
    const changes = logged.flatMap((c) => {
      const type = eventOfAction(c.action);
      return type && webhook.events.includes(type) ? [{ type, id: c.resourceId }] : [];
    });
    if (changes.length === 0) return [];
    const dataOf = await eventData(deps, webhook.orgId, changes);
    const createdAt = deps.clock.now();
    return changes.flatMap(({ type, id }) => {
      const data = dataOf(type, id);
      // Plain JSON from here on (dates as ISO text): what is stored is what every attempt sends.
      const json: unknown = data === undefined ? undefined : JSON.parse(JSON.stringify(data));
      return json === undefined
        ? []
        : [{ id: newId('msg'), orgId: webhook.orgId, webhookId: webhook.id, type, data: json, createdAt }];
    });
  };

async function feedWebhook(deps: FeedDeps, webhookId: string): Promise<number> {
  const plan = planDeliveries(deps);
  let made = 0;
  for (;;) {
    const step = await deps.feed.advance(webhookId, STEP, plan);
    if (!step) return made;
    // Stored: a job that cannot be added now is added by the sweep of lost deliveries.
    await Promise.all(step.deliveries.map((d) => deps.queue.enqueue(d).catch(() => undefined)));
    made += step.deliveries.length;
    if (!step.more) return made;
  }
}

/**
 * Feeds every webhook behind its org's sealed log (run after each seal), all of them each round,
 * four at a time, so none waits on busier ones for long: the events its new entries tell of become
 * deliveries, each exactly once, and their jobs are added. A webhook whose org logged nothing it
 * subscribes to is not behind. A webhook that
 * fails is reported and fed from the same place next round; the others go on. Returns how many
 * deliveries were made.
 */
export async function feedWebhooks(deps: FeedDeps): Promise<number> {
  const behind = await deps.feed.behind();
  let made = 0;
  const feedNext = async (): Promise<void> => {
    for (let webhookId = behind.shift(); webhookId !== undefined; webhookId = behind.shift()) {
      const id = webhookId;
      made += await feedWebhook(deps, id).catch((err: unknown) => (deps.onError(err, id), 0));
    }
  };
  await Promise.all(Array.from({ length: AT_ONCE }, feedNext));
  return made;
}
