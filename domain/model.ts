import type { Role, Scope } from './scopes';

export interface Org {
  id: string;
  name: string;
  createdAt: Date;
}

export interface User {
  id: string;
  orgId: string;
  email: string;
  name: string | null;
  role: Role;
  passwordHash: string;
  createdAt: Date;
}

export interface ApiKey {
  id: string;
  orgId: string;
  name: string;
  prefix: string;
  secretHash: string;
  scopes: Scope[];
  createdAt: Date;
  expiresAt: Date;
  lastUsedAt: Date | null;
  /** When the key stops (or stopped) working; in the future during a rotation's grace. */
  revokedAt: Date | null;
  createdBy: string | null;
  replacedBy: string | null;
}

/** A human's dashboard session (`css_` token). */
export interface UserSession {
  id: string;
  orgId: string;
  userId: string;
  tokenHash: string;
  createdAt: Date;
  expiresAt: Date;
  revokedAt: Date | null;
}

export interface Invite {
  id: string;
  orgId: string;
  email: string;
  role: Role;
  tokenHash: string;
  createdBy: string;
  createdAt: Date;
  expiresAt: Date;
  acceptedAt: Date | null;
}

export interface PageRequest {
  limit: number;
  /** The id of the last item of the previous page. */
  after: string | null;
}

export interface Page<T> {
  items: T[];
  nextAfter: string | null;
}
