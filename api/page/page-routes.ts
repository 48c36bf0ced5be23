import Router from '@koa/router';
import type { Context } from 'koa';
import type { z } from 'zod';
import { getApproval, listApprovals, voteOnApproval } from '../../domain/approvals/approval-use-cases';
import type { VoteDecision } from '../../domain/approvals/approval';
import { login } from '../../domain/auth/login';
import { logout } from '../../domain/auth/logout';
import { notFound } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import { grants, type Scope } from '../../domain/scopes';
import type { Infra } from '../../infra/container';
import { readJsonBody } from '../http/body-parser';
import { approvalDeps, identityDeps } from '../http/deps';
import { setRateHeaders } from '../http/rate-headers';
import { parseInput, refuseUnstorable } from '../http/validate';
import { presentApproval, presentUser } from '../presenters';
import { ApprovalQuery, VoteBody } from '../schemas/approvals.schemas';
import { decodeTimedCursor, encodeTimedCursor } from '../schemas/common';
import { LoginBody } from '../schemas/identity.schemas';
import { CsrfTokens } from './csrf-tokens';
import {
  authenticateSession,
  callContextOf,
  limitRate,
  refuseForgery,
  requireJsonType,
  requireScope,
  requireSessionToken,
} from './page-auth';
import { sendFile, type StaticFile } from '../http/static-file';
import { loadPageAssets } from './page-assets';
import { clearSessionCookie, setSessionCookie } from './session-cookie';

interface Signed {
  principal: Principal;
  token: string;
}

const serve =
  (asset: StaticFile) =>
  (ctx: Context): void =>
    sendFile(ctx, asset);

/** Reads a JSON body by the API's own rules: 415, 413, 400 invalid_json, unstorable text, the schema. */
async function readBody<S extends z.ZodType>(ctx: Context, infra: Infra, schema: S): Promise<z.infer<S>> {
  const raw = (await readJsonBody(ctx, infra.config.CP_MAX_BODY_BYTES)) ?? {};
  refuseUnstorable({ path: ctx.params, body: raw });
  return parseInput(schema, raw, 'body');
}

/** The page's own routes: its files, sign-in and sign-out, and a cookie-authenticated API over the approval use cases. */
export function pageRouter(infra: Infra): Router {
  const csrf = new CsrfTokens(infra.keyring);
  const assets = loadPageAssets();
  const router = new Router();

  /** Cookie auth -> CSRF (unsafe methods) -> scope -> rate limit -> handler; answers are never cached. */
  const withSession =
    (options: { scope?: Scope; unsafe?: boolean }, handle: (ctx: Context, s: Signed) => Promise<unknown>) =>
    async (ctx: Context): Promise<void> => {
      ctx.set('Cache-Control', 'no-store');
      const token = requireSessionToken(ctx);
      const principal = await authenticateSession(infra, token, ctx.ip);
      if (options.unsafe) refuseForgery(ctx, token, csrf);
      if (options.scope) requireScope(principal, options.scope);
      await limitRate(ctx, infra, principal);
      refuseUnstorable({ path: ctx.params });
      ctx.body = await handle(ctx, { principal, token });
    };

  const signIn = async (ctx: Context): Promise<void> => {
    ctx.set('Cache-Control', 'no-store');
    // The public routes' per-address budget, shared with POST /v1/auth/login.
    setRateHeaders(ctx, await infra.rateLimits.perIp.consume(ctx.ip));
    requireJsonType(ctx);
    const body = await readBody(ctx, infra, LoginBody);
    const r = await login(identityDeps(infra), body, ctx.state.requestId as string);
    setSessionCookie(ctx, r.sessionToken, r.expiresAt, infra.clock.now());
    ctx.body = {
      user: presentUser(r.user),
      role: r.user.role,
      csrf_token: csrf.issue(r.sessionToken),
      expires_at: r.expiresAt.toISOString(),
    };
  };

  const signOut = async (ctx: Context): Promise<void> => {
    ctx.set('Cache-Control', 'no-store');
    const token = requireSessionToken(ctx);
    refuseForgery(ctx, token, csrf);
    // The cookie goes whatever follows: a session that no longer authenticates is over anyway.
    clearSessionCookie(ctx);
    const principal = await authenticateSession(infra, token, ctx.ip);
    await logout(identityDeps(infra), callContextOf(ctx, principal));
    ctx.status = 204;
  };

  const me = async (ctx: Context, { principal, token }: Signed) => {
    const user = await infra.uow.read((tx) => tx.users.get(principal.orgId, principal.id));
    if (!user) throw notFound('user');
    return {
      user: presentUser(user),
      role: user.role,
      scopes: principal.scopes,
      can_vote: grants(principal.scopes, 'policies:write'),
      csrf_token: csrf.issue(token),
    };
  };

  const list = async (ctx: Context, { principal }: Signed) => {
    refuseUnstorable({ path: {}, query: ctx.query });
    const query = parseInput(ApprovalQuery, ctx.query, 'query');
    const filter = {
      status: query.status,
      agentId: query.agent_id,
      sessionId: query.session_id,
      policyId: query.policy_id,
    };
    const page = await listApprovals(approvalDeps(infra), callContextOf(ctx, principal), filter, {
      limit: query.limit,
      after: decodeTimedCursor(query.cursor, 'approval-queue'),
      order: 'oldest', // the queue is worked from its head; the oldest expire first
    });
    return {
      data: page.items.map(presentApproval),
      next_cursor: encodeTimedCursor(page.next, 'approval-queue'),
    };
  };

  const one = async (ctx: Context, { principal }: Signed) =>
    presentApproval(
      await getApproval(approvalDeps(infra), callContextOf(ctx, principal), ctx.params.id ?? ''),
    );

  const vote =
    (decision: VoteDecision) =>
    async (ctx: Context, { principal }: Signed) => {
      const body = await readBody(ctx, infra, VoteBody);
      const approval = await voteOnApproval(
        approvalDeps(infra),
        callContextOf(ctx, principal),
        ctx.params.id ?? '',
        {
          decision,
          comment: body.comment ?? null,
        },
      );
      return presentApproval(approval);
    };

  router.get('/approvals', serve(assets.shell));
  router.get('/approvals/app.js', serve(assets.script));
  router.get('/approvals/app.css', serve(assets.style));
  router.get('/approvals/favicon.svg', serve(assets.icon));
  router.post('/approvals/session', signIn);
  router.delete('/approvals/session', signOut);
  router.get('/approvals/api/me', withSession({}, me));
  router.get('/approvals/api/approvals', withSession({ scope: 'policies:read' }, list));
  router.get('/approvals/api/approvals/:id', withSession({ scope: 'policies:read' }, one));
  for (const decision of ['approve', 'reject'] as const)
    router.post(
      `/approvals/api/approvals/:id/${decision}`,
      withSession({ scope: 'policies:write', unsafe: true }, vote(decision)),
    );
  return router;
}
