import type { Actor } from './audit/audit-event';
import type { Role, Scope } from './scopes';

/** Who is calling: an API key, or a human through a dashboard session. */
export interface Principal {
  kind: 'api_key' | 'user';
  /** The key id, or the user id. */
  id: string;
  orgId: string;
  scopes: Scope[];
  /** For humans: their role and the session to end on logout. */
  role?: Role;
  sessionId?: string;
  tokenHash: string;
}

export const actorOf = (p: Principal): Actor => ({
  type: p.kind === 'api_key' ? 'api_key' : 'user',
  id: p.id,
});

/** The request a use case runs for: who, in which org, under which request id. */
export interface CallContext {
  principal: Principal;
  requestId: string | null;
}
