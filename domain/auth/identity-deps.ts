import type { Clock } from '../clock';
import type { AuthCache, UnitOfWork } from '../ports';

export interface IdentityDeps {
  uow: UnitOfWork;
  clock: Clock;
  authCache: AuthCache;
  /** Lifetime of a dashboard session (`css_` token). */
  sessionTtlSeconds: number;
}

export const normalizeEmail = (email: string): string => email.trim().toLowerCase();
