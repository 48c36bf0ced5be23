import { z } from 'zod';
import { ERROR_STATUS } from './http/error-status';
import type { RouteDef } from './http/route';
import { UNSTORABLE_INPUT_RULE } from './http/unstorable-input';
import { ErrorBody } from './schemas/common';

type JsonSchema = Record<string, unknown>;

const toSchema = (schema: z.ZodType, io: 'input' | 'output'): JsonSchema => {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, {
    io,
    unrepresentable: 'any',
    reused: 'inline',
  }) as JsonSchema;
  return rest;
};

function queryParameters(route: RouteDef) {
  const shape = route.query instanceof z.ZodObject ? (route.query.shape as Record<string, z.ZodType>) : {};
  return Object.entries(shape).map(([name, schema]) => ({
    name,
    in: 'query',
    required: !schema.safeParse(undefined).success,
    schema: toSchema(schema, 'input'),
  }));
}

const pathParameters = (path: string) =>
  [...path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({
    name,
    in: 'path',
    required: true,
    schema: { type: 'string' },
  }));

const IDEMPOTENCY_KEY = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'The same key with the same body within 24 h returns the first response (with Idempotent-Replayed: true) and creates nothing; another body: 409 idempotency_conflict. Keys are scoped to the caller (the API key, or the dashboard user): the same key sent by another caller of the org is a separate request that runs and keeps its own response; a stored response is never replayed to anyone else.',
  schema: { type: 'string', minLength: 1, maxLength: 255 },
};

const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
});

function responsesOf(route: RouteDef) {
  const out: Record<string, unknown> = {};
  for (const [status, { description, schema }] of Object.entries(route.responses)) {
    out[status] =
      Number(status) >= 400
        ? errorResponse(description)
        : {
            description,
            ...(schema ? { content: { 'application/json': { schema: toSchema(schema, 'output') } } } : {}),
          };
  }
  if (route.body || route.query)
    out['400'] ??= errorResponse('invalid_json or validation_error (with details)');
  if (route.access.kind !== 'public')
    out['401'] = errorResponse('missing_credentials, invalid_api_key or expired_api_key');
  if (route.access.kind === 'scope')
    out['403'] = errorResponse(`insufficient_scope: requires ${route.access.scopes.join(' or ')}`);
  if (!route.unlimited) out['429'] = errorResponse('rate_limited; see Retry-After');
  out['503'] = errorResponse('unavailable: the database or Redis is unreachable');
  return out;
}

/** x-required-scope, and x-accepted-scopes when any of several will do. */
const scopeExtensions = (scopes: string[]) => ({
  'x-required-scope': scopes[0],
  ...(scopes.length > 1 ? { 'x-accepted-scopes': scopes } : {}),
});

function operation(route: RouteDef) {
  return {
    summary: route.summary,
    tags: [route.tag],
    operationId: `${route.method.toLowerCase()}${route.path.replace(/[^A-Za-z0-9]+(\w)?/g, (_, c: string) => (c ?? '').toUpperCase())}`,
    ...(route.access.kind === 'public' ? { security: [] } : {}),
    ...(route.access.kind === 'scope' ? scopeExtensions(route.access.scopes) : {}),
    parameters: [
      ...pathParameters(route.path),
      ...queryParameters(route),
      ...(route.idempotent ? [IDEMPOTENCY_KEY] : []),
    ],
    ...(route.body
      ? {
          requestBody: {
            required: !route.bodyOptional,
            content: { 'application/json': { schema: toSchema(route.body, 'input') } },
          },
        }
      : {}),
    responses: responsesOf(route),
  };
}

/** The OpenAPI 3.1 description, built from the same route table and zod schemas that serve requests. */
export function buildOpenApi(routes: RouteDef[]) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) (paths[route.path] ??= {})[route.method.toLowerCase()] = operation(route);
  return {
    openapi: '3.1.0',
    info: {
      title: 'Control plane for governed LLM use',
      version: '1.0.0',
      description: [
        'JSON in and out; request bodies are strict (unknown fields are a validation_error), and so are',
        'query strings. Lists are newest first with `limit` (1..100, default 20) and an opaque `cursor`.',
        "Another org's resource answers 404. Every response carries X-Request-Id.",
        UNSTORABLE_INPUT_RULE,
        `Error codes and statuses: ${Object.entries(ERROR_STATUS)
          .map(([c, s]) => `${c} ${s}`)
          .join(', ')}.`,
      ].join(' '),
    },
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'csk_ API key or css_ session token' },
      },
      schemas: { Error: toSchema(ErrorBody, 'output') },
    },
    security: [{ bearer: [] }],
    paths,
  };
}
