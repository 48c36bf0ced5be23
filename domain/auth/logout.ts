import { newAuditEvent } from '../audit/new-event';
import { invalidField } from '../errors';
import { actorOf, type CallContext } from '../principal';
import type { IdentityDeps } from './identity-deps';

/** Ends the dashboard session the request came with. API keys are revoked, not logged out. */
export async function logout(deps: IdentityDeps, ctx: CallContext): Promise<void> {
  const { principal } = ctx;
  if (principal.kind !== 'user' || !principal.sessionId) {
    throw invalidField('authorization', 'logout takes a dashboard session token (css_), not an API key');
  }
  const sessionId = principal.sessionId;
  const now = deps.clock.now();
  await deps.uow.transaction(async (tx) => {
    const session = await tx.userSessions.get(principal.orgId, sessionId);
    if (!session || session.revokedAt) return;
    session.revokedAt = now;
    tx.userSessions.update(session);
    tx.audit.record(
      newAuditEvent({
        orgId: principal.orgId,
        actor: actorOf(principal),
        action: 'auth.logout',
        resource: { type: 'user', id: principal.id },
        at: now,
        requestId: ctx.requestId,
      }),
    );
  });
  await deps.authCache.forget(principal.tokenHash);
}
