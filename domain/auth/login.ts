import { newAuditEvent } from '../audit/new-event';
import { DomainError } from '../errors';
import type { User } from '../model';
import { normalizeEmail, type IdentityDeps } from './identity-deps';
import { openUserSession } from './open-session';
import { decoyPasswordHash, verifyPassword } from './password';

export interface LoginResult {
  sessionToken: string;
  expiresAt: Date;
  user: User;
}

const invalidCredentials = () => new DomainError('invalid_credentials', 'email or password is wrong');

/**
 * The same error, after the same scrypt work, for an unknown email and a wrong password. A
 * failed login against a real account is audited in that account's org.
 */
export async function login(
  deps: IdentityDeps,
  input: { email: string; password: string },
  requestId: string | null,
): Promise<LoginResult> {
  const email = normalizeEmail(input.email);
  const user = await deps.uow.read((tx) => tx.users.findByEmail(email));
  const ok = await verifyPassword(input.password, user?.passwordHash ?? (await decoyPasswordHash()));
  const now = deps.clock.now();
  if (!user) throw invalidCredentials();
  const base = { orgId: user.orgId, actor: { type: 'user' as const, id: user.id }, at: now, requestId };
  const resource = { type: 'user', id: user.id };
  if (!ok) {
    await deps.uow.transaction(async (tx) =>
      tx.audit.record(newAuditEvent({ ...base, action: 'auth.login_failed', resource, outcome: 'failure' })),
    );
    throw invalidCredentials();
  }
  const { session, token } = openUserSession(user, now, deps.sessionTtlSeconds);
  await deps.uow.transaction(async (tx) => {
    tx.userSessions.add(session);
    tx.audit.record(newAuditEvent({ ...base, action: 'auth.login', resource }));
  });
  return { sessionToken: token, expiresAt: session.expiresAt, user };
}
