import { login } from '../../domain/auth/login';
import { logout } from '../../domain/auth/logout';
import { signupUser } from '../../domain/auth/signup-user';
import { createInvite } from '../../domain/orgs/create-invite';
import { signupOrg } from '../../domain/orgs/signup-org';
import { callOf } from '../http/call-context';
import { identityDeps } from '../http/deps';
import { AUTHENTICATED, defineRoute, needs, PUBLIC } from '../http/route';
import { presentKey, presentOrg, presentUser } from '../presenters';
import {
  InviteBody,
  InviteResponse,
  LoginBody,
  LoginResponse,
  OrgSignupBody,
  OrgSignupResponse,
  UserSignupBody,
  UserSignupResponse,
} from '../schemas/identity.schemas';

export const identityRoutes = [
  defineRoute({
    method: 'POST',
    path: '/v1/orgs/signup',
    summary: 'Create an organization with its owner, a session token and a bootstrap org:admin key',
    tag: 'identity',
    access: PUBLIC,
    body: OrgSignupBody,
    responses: {
      201: { description: 'created', schema: OrgSignupResponse },
      409: { description: 'email taken' },
    },
    handle: async ({ body, infra, requestId }) => {
      const r = await signupOrg(identityDeps(infra), { orgName: body.org_name, ...body }, requestId);
      return {
        status: 201,
        body: {
          org: presentOrg(r.org),
          user: presentUser(r.user),
          session_token: r.sessionToken,
          api_key: { ...presentKey(r.bootstrapKey.key), key: r.bootstrapKey.secret },
        },
      };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/auth/signup',
    summary: 'Join an organization with an invite token',
    tag: 'identity',
    access: PUBLIC,
    body: UserSignupBody,
    responses: {
      201: { description: 'created', schema: UserSignupResponse },
      400: { description: 'invalid input, or an unknown, used or expired invite' },
      409: { description: 'email taken' },
    },
    handle: async ({ body, infra, requestId }) => {
      const user = await signupUser(
        identityDeps(infra),
        { ...body, inviteToken: body.invite_token },
        requestId,
      );
      return { status: 201, body: { user: presentUser(user) } };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/auth/login',
    summary: 'Exchange email and password for a dashboard session token (css_)',
    tag: 'identity',
    access: PUBLIC,
    body: LoginBody,
    responses: {
      200: { description: 'logged in', schema: LoginResponse },
      401: { description: 'invalid_credentials' },
    },
    handle: async ({ body, infra, requestId }) => {
      const r = await login(identityDeps(infra), body, requestId);
      return {
        status: 200,
        body: {
          session_token: r.sessionToken,
          expires_at: r.expiresAt.toISOString(),
          user: presentUser(r.user),
        },
      };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/auth/logout',
    summary: 'End the dashboard session of the token sent (a css_ token; API keys are revoked instead)',
    tag: 'identity',
    access: AUTHENTICATED,
    responses: {
      204: { description: 'logged out' },
      400: {
        description:
          'validation_error (path authorization): the token is an API key; logout takes a dashboard session token (css_), keys are revoked instead',
      },
    },
    handle: async (input) => {
      await logout(identityDeps(input.infra), callOf(input));
      return { status: 204 };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/orgs/invites',
    summary: 'Invite a person to the organization with a role',
    tag: 'identity',
    access: needs('org:admin'),
    body: InviteBody,
    responses: { 201: { description: 'created', schema: InviteResponse } },
    handle: async (input) => {
      const { invite, token } = await createInvite(input.infra, callOf(input), input.body);
      return { status: 201, body: { invite_token: token, expires_at: invite.expiresAt.toISOString() } };
    },
  }),
];
