import type { AuditEvent } from '../audit/audit-event';
import type { Page, PageRequest } from '../model';
import type { Session, SessionStatus } from './session';

export interface SessionFilter {
  status?: SessionStatus | undefined;
  agentId?: string | undefined;
}

/** Sessions in PostgreSQL; each change is written with its audit event in one statement. */
export interface SessionStore {
  add(session: Session, event: AuditEvent): Promise<void>;
  get(orgId: string, id: string): Promise<Session | null>;
  list(orgId: string, filter: SessionFilter, page: PageRequest, now: Date): Promise<Page<Session>>;
  /** Closes the session if it is open and not past its expiry; null when it was not. */
  close(
    orgId: string,
    id: string,
    at: Date,
    event: (session: Session) => AuditEvent,
  ): Promise<Session | null>;
  /** Marks open sessions past their expiry as expired, each with an audit event; returns how many. */
  expireDue(now: Date, limit: number, event: (session: Session) => AuditEvent): Promise<number>;
}
