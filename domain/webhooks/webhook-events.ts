/** The events an org's webhooks may subscribe to (../shared/API.md, Governance extensions). */
export const WEBHOOK_EVENT_TYPES = [
  'approval.requested',
  'approval.resolved',
  'invocation.finished',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/**
 * The audit actions that tell of each event. Webhooks are fed from the org's sealed audit log, in
 * which every change is written in the change's own transaction: an invocation ends with exactly
 * one of its end actions (the statuses a write ends it with), an approval with one of its own.
 */
export const EVENT_ACTIONS: Record<WebhookEventType, readonly string[]> = {
  'approval.requested': ['approval.requested'],
  'approval.resolved': ['approval.approved', 'approval.rejected', 'approval.expired', 'approval.cancelled'],
  'invocation.finished': [
    'llm.invoke.succeeded',
    'llm.invoke.failed',
    'llm.invoke.denied',
    'llm.invoke.cancelled',
  ],
};

/** The event an audit action tells of, if any. */
export const eventOfAction = (action: string): WebhookEventType | null =>
  WEBHOOK_EVENT_TYPES.find((type) => EVENT_ACTIONS[type].includes(action)) ?? null;
