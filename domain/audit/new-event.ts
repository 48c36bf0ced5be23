import { newId } from '../ids';
import { scrubDetails, type Actor, type AuditEvent, type Outcome } from './audit-event';

export interface EventInput {
  orgId: string;
  actor: Actor;
  action: string;
  resource: { type: string; id: string };
  at: Date;
  requestId: string | null;
  outcome?: Outcome;
  details?: Record<string, unknown>;
}

export const newAuditEvent = (input: EventInput): AuditEvent => ({
  id: newId('aud'),
  orgId: input.orgId,
  at: input.at,
  actor: input.actor,
  action: input.action,
  resource: input.resource,
  outcome: input.outcome ?? 'success',
  details: scrubDetails(input.details ?? {}) as Record<string, unknown>,
  requestId: input.requestId,
});
