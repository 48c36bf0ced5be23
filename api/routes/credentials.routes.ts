import { z } from 'zod';
import {
  deleteCredential,
  getCredential,
  listCredentials,
  rotateCredential,
  storeCredential,
} from '../../domain/credentials/credential-use-cases';
import { callOf } from '../http/call-context';
import { credentialDeps } from '../http/deps';
import { defineRoute, needs } from '../http/route';
import { presentCredential } from '../presenters';
import { listOf, pageQuery, pageReply, pageRequest } from '../schemas/common';
import { CredentialView, RotateCredentialBody, StoreCredentialBody } from '../schemas/credentials.schemas';

const read = needs('credentials:read');
const write = needs('credentials:write');
const refPath = '/v1/credentials/{ref}';
const notFound = { description: 'no such credential in this org (or it was deleted)' };

export const credentialRoutes = [
  defineRoute({
    method: 'POST',
    path: '/v1/credentials',
    summary: 'Store a provider secret (encrypted at rest); returns its credential_ref',
    tag: 'credentials',
    access: write,
    idempotent: true,
    body: StoreCredentialBody,
    responses: { 201: { description: 'stored', schema: CredentialView } },
    handle: async (input) => {
      const { body } = input;
      const credential = await storeCredential(credentialDeps(input.infra), callOf(input), {
        name: body.name,
        provider: body.provider,
        secret: body.secret,
        baseUrl: body.base_url,
      });
      return { status: 201, body: presentCredential(credential) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/credentials',
    summary: 'List the live credentials of the org, newest first (never their secrets)',
    tag: 'credentials',
    access: read,
    query: z.object(pageQuery).strict(),
    responses: { 200: { description: 'a page of credentials', schema: listOf(CredentialView) } },
    handle: async (input) => {
      const page = await listCredentials(
        credentialDeps(input.infra),
        callOf(input),
        pageRequest(input.query, 'credentials'),
      );
      return pageReply(page, presentCredential, 'credentials');
    },
  }),
  defineRoute({
    method: 'GET',
    path: refPath,
    summary: 'Get one credential (never its secret)',
    tag: 'credentials',
    access: read,
    responses: { 200: { description: 'the credential', schema: CredentialView }, 404: notFound },
    handle: async (input) => {
      const credential = await getCredential(
        credentialDeps(input.infra),
        callOf(input),
        input.params.ref ?? '',
      );
      return { status: 200, body: presentCredential(credential) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: `${refPath}/rotate`,
    summary: 'Replace the secret under the same ref; version goes up by one',
    tag: 'credentials',
    access: write,
    body: RotateCredentialBody,
    responses: { 200: { description: 'the rotated credential', schema: CredentialView }, 404: notFound },
    handle: async (input) => {
      const credential = await rotateCredential(
        credentialDeps(input.infra),
        callOf(input),
        input.params.ref ?? '',
        input.body.secret,
      );
      return { status: 200, body: presentCredential(credential) };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: refPath,
    summary:
      'Delete a credential: its secret is destroyed at once, its history stays readable; the approvals of invocations that would run with it are withdrawn (cancelled, the invocations failed credential_not_found)',
    tag: 'credentials',
    access: write,
    responses: { 204: { description: 'deleted' }, 404: notFound },
    handle: async (input) => {
      await deleteCredential(credentialDeps(input.infra), callOf(input), input.params.ref ?? '');
      return { status: 204 };
    },
  }),
];
