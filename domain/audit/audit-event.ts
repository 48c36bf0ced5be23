export type ActorType = 'api_key' | 'user' | 'system';

export interface Actor {
  type: ActorType;
  id: string;
}

export const SYSTEM_ACTOR: Actor = { type: 'system', id: 'system' };

/**
 * Someone not signed in, such as the sender of a wrong password. The contract's actor types have no
 * other name for it; it is never the account they tried, whose history it would otherwise join.
 */
export const ANONYMOUS_ACTOR: Actor = { type: 'system', id: 'anonymous' };

export type Outcome = 'success' | 'failure' | 'denied';

/** What a change records, in the same transaction as the change. */
export interface AuditEvent {
  id: string;
  orgId: string;
  at: Date;
  actor: Actor;
  action: string;
  resource: { type: string; id: string };
  outcome: Outcome;
  details: Record<string, unknown>;
  requestId: string | null;
}

/** An event once the sealer has placed it in its org's chain. */
export interface AuditEntry extends AuditEvent {
  seq: number;
  prevHash: string;
  hash: string;
}

// Whole names or `_`-suffixes (session_token, api_key), so counts such as max_tokens or
// input_tokens, and harmless names such as secret_hint, stay readable.
const SECRET_FIELD = /(^|_)(pass(word)?|secret|token|key|api_?key|authorization)$/i;
const SECRET_VALUE = /\b(csk|css|cit)_[A-Za-z0-9_-]{20,}/;

/**
 * A last line of defence: audit entries can never be deleted, so a secret that slipped into
 * one would live forever. Fields named like secrets and values shaped like our tokens are
 * replaced before the event is written.
 */
export function scrubDetails(value: unknown, field = ''): unknown {
  if (field && SECRET_FIELD.test(field)) return '[redacted]';
  if (typeof value === 'string') return SECRET_VALUE.test(value) ? '[redacted]' : value;
  if (Array.isArray(value)) return value.map((v) => scrubDetails(v));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, scrubDetails(v, k)]));
  }
  return value;
}
