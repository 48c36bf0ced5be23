import { getKey, listKeys, mintKey, revokeKey, rotateKey } from '../../domain/keys/key-use-cases';
import type { ApiKey } from '../../domain/model';
import type { Infra } from '../../infra/container';
import { callOf } from '../http/call-context';
import { keyDeps } from '../http/deps';
import { defineRoute, needs } from '../http/route';
import { presentKey } from '../presenters';
import { decodeCursor, encodeCursor, listOf, pageQuery } from '../schemas/common';
import { Key, KeyWithSecret, MintKeyBody, RotateKeyBody } from '../schemas/keys.schemas';
import { z } from 'zod';

const admin = needs('org:admin');
const keyPath = '/v1/keys/{id}';
const notFound = { description: 'no such key in this org' };

async function presentKeys(infra: Infra, keys: ApiKey[]) {
  const lastUsed = await infra.keyUsage.lastUsed(keys.map((k) => k.id));
  return keys.map((k) => presentKey(k, lastUsed.get(k.id)));
}

export const keyRoutes = [
  defineRoute({
    method: 'POST',
    path: '/v1/keys',
    summary: 'Mint a scoped API key; the secret is in the response only',
    tag: 'keys',
    access: admin,
    idempotent: true,
    body: MintKeyBody,
    responses: { 201: { description: 'minted', schema: KeyWithSecret } },
    handle: async (input) => {
      const { body } = input;
      const { key, secret } = await mintKey(keyDeps(input.infra), callOf(input), {
        name: body.name,
        scopes: body.scopes,
        ...(body.expires_in_days !== undefined ? { expiresInDays: body.expires_in_days } : {}),
      });
      return { status: 201, body: { ...presentKey(key), key: secret } };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/keys',
    summary: 'List the keys of the org, newest first (never their secrets)',
    tag: 'keys',
    access: admin,
    query: z.object(pageQuery).strict(),
    responses: { 200: { description: 'a page of keys', schema: listOf(Key) } },
    handle: async (input) => {
      const after = decodeCursor(input.query.cursor, 'string', 'keys');
      const page = await listKeys(keyDeps(input.infra), callOf(input), { limit: input.query.limit, after });
      return {
        status: 200,
        body: {
          data: await presentKeys(input.infra, page.items),
          next_cursor: encodeCursor(page.nextAfter, 'keys'),
        },
      };
    },
  }),
  defineRoute({
    method: 'GET',
    path: keyPath,
    summary: 'Get one key (never its secret)',
    tag: 'keys',
    access: admin,
    responses: { 200: { description: 'the key', schema: Key }, 404: notFound },
    handle: async (input) => {
      const key = await getKey(keyDeps(input.infra), callOf(input), input.params.id ?? '');
      const [shown] = await presentKeys(input.infra, [key]);
      return { status: 200, body: shown };
    },
  }),
  defineRoute({
    method: 'POST',
    path: `${keyPath}/rotate`,
    summary: 'Replace a key with a new secret; the old one stops now or after grace_seconds',
    tag: 'keys',
    access: admin,
    body: RotateKeyBody,
    bodyOptional: true,
    responses: {
      201: { description: 'the new key', schema: KeyWithSecret },
      404: notFound,
      409: { description: 'invalid_state: the key is already revoked or rotated' },
    },
    handle: async (input) => {
      const { key, secret } = await rotateKey(
        keyDeps(input.infra),
        callOf(input),
        input.params.id ?? '',
        input.body.grace_seconds,
      );
      return { status: 201, body: { ...presentKey(key), key: secret } };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: keyPath,
    summary:
      'Revoke a key at once (revoking twice is fine); the approvals its invocations wait on are withdrawn (cancelled, the invocations failed invalid_api_key)',
    tag: 'keys',
    access: admin,
    outsideOrgLimit: true,
    responses: { 200: { description: 'the revoked key', schema: Key }, 404: notFound },
    handle: async (input) => {
      const key = await revokeKey(keyDeps(input.infra), callOf(input), input.params.id ?? '');
      const [shown] = await presentKeys(input.infra, [key]);
      return { status: 200, body: shown };
    },
  }),
];
