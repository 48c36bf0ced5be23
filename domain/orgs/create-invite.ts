import { newAuditEvent } from '../audit/new-event';
import { normalizeEmail } from '../auth/identity-deps';
import { generateToken, hashToken } from '../auth/tokens';
import { addDays, type Clock } from '../clock';
import { newId } from '../ids';
import type { Invite } from '../model';
import type { UnitOfWork } from '../ports';
import { actorOf, type CallContext } from '../principal';
import type { Role } from '../scopes';

export const INVITE_LIFETIME_DAYS = 7;

export interface InviteResult {
  invite: Invite;
  /** The `cit_` token to send to the invitee: shown once, stored only as a hash. */
  token: string;
}

export async function createInvite(
  deps: { uow: UnitOfWork; clock: Clock },
  ctx: CallContext,
  input: { email: string; role: Role },
): Promise<InviteResult> {
  const now = deps.clock.now();
  const token = generateToken('cit_');
  const invite: Invite = {
    id: newId('ivt'),
    orgId: ctx.principal.orgId,
    email: normalizeEmail(input.email),
    role: input.role,
    tokenHash: hashToken(token),
    createdBy: ctx.principal.id,
    createdAt: now,
    expiresAt: addDays(now, INVITE_LIFETIME_DAYS),
    acceptedAt: null,
  };
  await deps.uow.transaction(async (tx) => {
    tx.invites.add(invite);
    tx.audit.record(
      newAuditEvent({
        orgId: invite.orgId,
        actor: actorOf(ctx.principal),
        action: 'invite.created',
        resource: { type: 'invite', id: invite.id },
        at: now,
        requestId: ctx.requestId,
        details: { email: invite.email, role: invite.role, expires_at: invite.expiresAt.toISOString() },
      }),
    );
  });
  return { invite, token };
}
