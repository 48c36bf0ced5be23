import { newAuditEvent } from '../audit/new-event';
import { normalizeEmail, type IdentityDeps } from '../auth/identity-deps';
import { openUserSession } from '../auth/open-session';
import { hashPassword } from '../auth/password';
import { conflict } from '../errors';
import { newId } from '../ids';
import { buildKey, expiryFromDays, KEY_LIFETIME_DAYS, type MintedKey } from '../keys/build-key';
import type { Org, User, UserSession } from '../model';

export interface SignupOrgInput {
  orgName: string;
  email: string;
  password: string;
  name?: string | undefined;
}

export interface SignupOrgResult {
  org: Org;
  user: User;
  session: UserSession;
  sessionToken: string;
  bootstrapKey: MintedKey;
}

/** A new org with its owner, a dashboard session and a `bootstrap` org:admin key. */
export async function signupOrg(deps: IdentityDeps, input: SignupOrgInput, requestId: string | null) {
  const passwordHash = await hashPassword(input.password);
  const now = deps.clock.now();
  const org: Org = { id: newId('org'), name: input.orgName, createdAt: now };
  const user: User = {
    id: newId('usr'),
    orgId: org.id,
    email: normalizeEmail(input.email),
    name: input.name ?? null,
    role: 'owner',
    passwordHash,
    createdAt: now,
  };
  const { session, token } = openUserSession(user, now, deps.sessionTtlSeconds);
  const bootstrapKey = buildKey({
    orgId: org.id,
    name: 'bootstrap',
    scopes: ['org:admin'],
    expiresAt: expiryFromDays(now, KEY_LIFETIME_DAYS.default),
    createdBy: user.id,
    heldByCreator: true,
    now,
  });
  await deps.uow.transaction(async (tx) => {
    if (await tx.users.findByEmail(user.email)) throw conflict('email is already registered');
    tx.orgs.add(org);
    tx.users.add(user);
    tx.userSessions.add(session);
    tx.keys.add(bootstrapKey.key);
    const actor = { type: 'user' as const, id: user.id };
    const base = { orgId: org.id, actor, at: now, requestId };
    tx.audit.record(
      newAuditEvent({
        ...base,
        action: 'org.created',
        resource: { type: 'org', id: org.id },
        details: { name: org.name },
      }),
    );
    tx.audit.record(
      newAuditEvent({
        ...base,
        action: 'user.signed_up',
        resource: { type: 'user', id: user.id },
        details: { email: user.email, role: user.role },
      }),
    );
    tx.audit.record(
      newAuditEvent({
        ...base,
        action: 'key.created',
        resource: { type: 'api_key', id: bootstrapKey.key.id },
        details: { name: 'bootstrap', prefix: bootstrapKey.key.prefix, scopes: bootstrapKey.key.scopes },
      }),
    );
  });
  const result: SignupOrgResult = { org, user, session, sessionToken: token, bootstrapKey };
  return result;
}
