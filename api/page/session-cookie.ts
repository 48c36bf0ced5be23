import type { Context } from 'koa';

/** The cookie holding the dashboard session token (css_…); only the page's paths ever receive it. */
export const SESSION_COOKIE = 'cp_approvals_session';

const ATTRIBUTES = 'Path=/approvals; HttpOnly; SameSite=Strict';

const secureFlag = (secure: boolean): string => (secure ? '; Secure' : '');

/** The cookie lives exactly as long as the session it holds. */
export function setSessionCookie(ctx: Context, token: string, expiresAt: Date, now: Date): void {
  const maxAge = Math.max(0, Math.floor((expiresAt.getTime() - now.getTime()) / 1000));
  ctx.append(
    'Set-Cookie',
    `${SESSION_COOKIE}=${token}; ${ATTRIBUTES}; Max-Age=${maxAge}; Expires=${expiresAt.toUTCString()}` +
      secureFlag(ctx.secure),
  );
}

export function clearSessionCookie(ctx: Context): void {
  ctx.append(
    'Set-Cookie',
    `${SESSION_COOKIE}=; ${ATTRIBUTES}; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT` +
      secureFlag(ctx.secure),
  );
}

/** The session token the browser sent, or null. */
export const sessionCookie = (ctx: Context): string | null => ctx.cookies.get(SESSION_COOKIE) || null;
