import { newAuditEvent } from '../audit/new-event';
import { conflict, invalidField } from '../errors';
import { newId } from '../ids';
import type { User } from '../model';
import { normalizeEmail, type IdentityDeps } from './identity-deps';
import { hashPassword } from './password';
import { hashToken } from './tokens';

export interface SignupUserInput {
  email: string;
  password: string;
  name?: string | undefined;
  inviteToken: string;
}

/** Joins the org of an invite, with the invite's role. An invite is good for one signup. */
export async function signupUser(
  deps: IdentityDeps,
  input: SignupUserInput,
  requestId: string | null,
): Promise<User> {
  const passwordHash = await hashPassword(input.password);
  const email = normalizeEmail(input.email);
  const now = deps.clock.now();
  return deps.uow.transaction(async (tx) => {
    const invite = await tx.invites.findByTokenHash(hashToken(input.inviteToken));
    if (!invite || invite.acceptedAt || invite.expiresAt.getTime() <= now.getTime()) {
      throw invalidField('invite_token', 'invite_token is unknown, used or expired');
    }
    if (invite.email !== email) throw invalidField('email', 'email does not match the invite');
    if (await tx.users.findByEmail(email)) throw conflict('email is already registered');
    const user: User = {
      id: newId('usr'),
      orgId: invite.orgId,
      email,
      name: input.name ?? null,
      role: invite.role,
      passwordHash,
      createdAt: now,
    };
    invite.acceptedAt = now;
    tx.users.add(user);
    tx.invites.update(invite);
    tx.audit.record(
      newAuditEvent({
        orgId: user.orgId,
        actor: { type: 'user', id: user.id },
        action: 'user.signed_up',
        resource: { type: 'user', id: user.id },
        at: now,
        requestId,
        details: { email, role: user.role, invite_id: invite.id },
      }),
    );
    return user;
  });
}
