import { addSeconds } from '../clock';
import { newId } from '../ids';
import type { User, UserSession } from '../model';
import { generateToken, hashToken } from './tokens';

export interface OpenedSession {
  session: UserSession;
  token: string;
}

export function openUserSession(user: User, now: Date, ttlSeconds: number): OpenedSession {
  const token = generateToken('css_');
  const session: UserSession = {
    id: newId('uss'),
    orgId: user.orgId,
    userId: user.id,
    tokenHash: hashToken(token),
    createdAt: now,
    expiresAt: addSeconds(now, ttlSeconds),
    revokedAt: null,
  };
  return { session, token };
}
