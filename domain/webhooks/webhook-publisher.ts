/** The events an org's webhooks may subscribe to (../shared/API.md, Governance extensions). */
export const WEBHOOK_EVENT_TYPES = [
  'approval.requested',
  'approval.resolved',
  'invocation.finished',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/**
 * Hands an event to the org's subscribed webhooks. Never throws and never waits on delivery: a
 * receiver that is slow or down must not slow the invoke path (deliveries run as jobs).
 */
export interface WebhookPublisher {
  publish(orgId: string, type: WebhookEventType, data: Record<string, unknown>): void;
}

export const NO_WEBHOOKS: WebhookPublisher = { publish: () => undefined };
