import type { AuditEvent } from './audit/audit-event';
import type { ApiKey, Invite, Org, Page, PageRequest, User, UserSession } from './model';

export interface OrgRepository {
  add(org: Org): void;
  get(id: string): Promise<Org | null>;
}

export interface UserRepository {
  add(user: User): void;
  findByEmail(email: string): Promise<User | null>;
  get(orgId: string, id: string): Promise<User | null>;
}

export interface KeyRepository {
  add(key: ApiKey): void;
  get(orgId: string, id: string): Promise<ApiKey | null>;
  list(orgId: string, page: PageRequest): Promise<Page<ApiKey>>;
  /** Writes changed fields of a key loaded in this transaction. */
  update(key: ApiKey): void;
}

export interface UserSessionRepository {
  add(session: UserSession): void;
  get(orgId: string, id: string): Promise<UserSession | null>;
  update(session: UserSession): void;
}

export interface InviteRepository {
  add(invite: Invite): void;
  findByTokenHash(tokenHash: string): Promise<Invite | null>;
  update(invite: Invite): void;
}

/** Records an audit event in the current transaction; the sealer chains it later. */
export interface AuditRecorder {
  record(event: AuditEvent): void;
}

export interface Tx {
  orgs: OrgRepository;
  users: UserRepository;
  keys: KeyRepository;
  userSessions: UserSessionRepository;
  invites: InviteRepository;
  audit: AuditRecorder;
}

/** Runs a function in one database transaction: all of its writes land, or none. */
export interface UnitOfWork {
  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  /** Reads outside a transaction (no BEGIN/COMMIT round trips). */
  read<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
}

/** Forgets cached authentication for a token, so revocation is felt at once. */
export interface AuthCache {
  forget(tokenHash: string): Promise<void>;
}
