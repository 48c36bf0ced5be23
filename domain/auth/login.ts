import { ANONYMOUS_ACTOR } from '../audit/audit-event';
import { newAuditEvent } from '../audit/new-event';
import { DomainError } from '../errors';
import type { User } from '../model';
import { normalizeEmail, type IdentityDeps } from './identity-deps';
import { openUserSession } from './open-session';
import { decoyPasswordHash, hashPassword, needsRehash, verifyPassword } from './password';

export interface LoginResult {
  sessionToken: string;
  expiresAt: Date;
  user: User;
}

const invalidCredentials = () => new DomainError('invalid_credentials', 'email or password is wrong');

/**
 * The same error, after the same scrypt work, for an unknown email and a wrong password. A
 * failed login against a real account is audited in that account's org, as the account's resource
 * by an anonymous actor (whoever sent it is not the account); a successful one upgrades a password
 * hash made at a lower scrypt cost.
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
    const failed = newAuditEvent({
      ...base,
      actor: ANONYMOUS_ACTOR,
      action: 'auth.login_failed',
      resource,
      outcome: 'failure',
    });
    await deps.uow.transaction(async (tx) => tx.audit.record(failed));
    throw invalidCredentials();
  }
  const { session, token } = openUserSession(user, now, deps.sessionTtlSeconds);
  const rehashed = needsRehash(user.passwordHash) ? await hashPassword(input.password) : null;
  await deps.uow.transaction(async (tx) => {
    // A hash made at a lower cost is upgraded now, the only time the password is known.
    if (rehashed) await tx.users.replacePasswordHash(user.orgId, user.id, user.passwordHash, rehashed);
    tx.userSessions.add(session);
    tx.audit.record(newAuditEvent({ ...base, action: 'auth.login', resource }));
  });
  return { sessionToken: token, expiresAt: session.expiresAt, user };
}
