import { z } from 'zod';
import { ERROR_STATUS } from './http/error-status';
import { REQUEST_ID_RULE } from './http/request-id';
import type { ResponseDef, RouteDef } from './http/route';
import { UNSTORABLE_INPUT_RULE } from './http/unstorable-input';
import { ErrorBody, OpenAIErrorBody } from './schemas/common';

type JsonSchema = Record<string, unknown>;

const DEFS = '#/$defs/';
const COMPONENTS = '#/components/schemas/';

/** Points every `#/$defs/X` reference at `#/components/schemas/X`, anywhere in a schema. */
function relink(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(relink);
  if (!value || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [
      k,
      k === '$ref' && typeof v === 'string' && v.startsWith(DEFS)
        ? COMPONENTS + v.slice(DEFS.length)
        : relink(v),
    ]),
  );
}

/**
 * A route's schema as JSON Schema. zod writes a schema named with `.meta({ id })` once, under the
 * `$defs` of the schema using it, and refers to it as `#/$defs/<id>`; in an OpenAPI document that
 * pointer resolves from the document's root, where there is no `$defs`. So the named schemas move to
 * `components.schemas` (shared by every route) and the references follow them.
 */
export function toSchema(
  schema: z.ZodType,
  io: 'input' | 'output',
  components: Record<string, unknown>,
): JsonSchema {
  const {
    $schema: _drop,
    $defs,
    ...rest
  } = z.toJSONSchema(schema, {
    io,
    unrepresentable: 'any',
    reused: 'inline',
  }) as JsonSchema & { $defs?: Record<string, unknown> };
  for (const [id, def] of Object.entries($defs ?? {})) components[id] ??= relink(def);
  return relink(rest) as JsonSchema;
}

/** Query or header parameters from the fields of an object schema (a description in its meta). */
function objectParameters(
  object: z.ZodType | undefined,
  where: 'query' | 'header',
  components: Record<string, unknown>,
) {
  const shape = object instanceof z.ZodObject ? (object.shape as Record<string, z.ZodType>) : {};
  return Object.entries(shape).map(([name, schema]) => {
    const json = toSchema(schema, 'input', components);
    return {
      name,
      in: where,
      required: !schema.safeParse(undefined).success,
      ...(typeof json.description === 'string' ? { description: json.description } : {}),
      schema: json,
    };
  });
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
    "The same key with the same body within 24 h returns the first response (with Idempotent-Replayed: true) and creates nothing; another body: 409 idempotency_conflict. Keys are scoped to the caller (the API key, or the dashboard user): the same key sent by another caller of the org is a separate request that runs and keeps its own response; a stored response is never replayed to anyone else. A request sent again while the first runs waits for its response. If the first request's process died, the same request takes the key over after max_wait_seconds + 30 s; an invoke whose invocation was already recorded then answers 202 with that invocation (its state when recorded; poll Location) instead of making another.",
  schema: { type: 'string', minLength: 1, maxLength: 255 },
};

/** The error schema a route answers with: OpenAI's shape on the OpenAI-compatible routes. */
const errorSchemaOf = (route: RouteDef): string =>
  `${COMPONENTS}${route.errorShape === 'openai' ? 'OpenAIError' : 'Error'}`;

const errorResponse = (description: string, schemaRef: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: schemaRef } } },
});

/** The errors every route of its kind may answer, whatever the route declares. */
function genericErrors(route: RouteDef): Record<number, string> {
  const out: Record<number, string> = {};
  const bodyless = !route.body && route.method !== 'GET';
  const invalid = [
    route.body || route.query || route.path.includes('{') ? 'validation_error (with details)' : null,
    route.body ? 'invalid_json' : null,
    // A route that reads no body may be sent one (`{}`, say): if sent, it is read.
    bodyless
      ? 'invalid_json when a body is sent and is not JSON (this route reads none: leave it out or send {})'
      : null,
    route.path.includes('{') ? 'an id with a NUL or a lone surrogate is a validation_error' : null,
  ].filter((d) => d !== null);
  if (invalid.length > 0) out[400] = invalid.join('; ');
  if (route.access.kind !== 'public') out[401] = 'missing_credentials, invalid_api_key or expired_api_key';
  if (route.access.kind === 'scope')
    out[403] = `insufficient_scope: requires ${route.access.scopes.join(' or ')}`;
  if (route.body || bodyless) {
    const sent = route.body ? 'the body is' : 'a body was sent';
    out[413] = `payload_too_large: ${sent} over the limit (limit_bytes)`;
    out[415] = `unsupported_media_type: ${sent}${route.body ? ' not sent' : ', not'} as application/json`;
  }
  if (route.idempotent)
    out[409] =
      'idempotency_conflict: the Idempotency-Key was sent with another body, or its first request still runs after the longest a request may take';
  if (!route.unlimited)
    out[429] =
      route.access.kind === 'public'
        ? "rate_limited: the client address's limit; see Retry-After"
        : "rate_limited: the key's (or person's) limit, or the org's for all its keys and people; see Retry-After";
  out[500] = 'internal_error: a bug, logged with the request id';
  out[503] = 'unavailable: the database or Redis is unreachable';
  return out;
}

const stringHeader = (description: string) => ({ description, schema: { type: 'string' } });

const RATE_HEADERS = {
  'RateLimit-Limit': 'requests allowed per window (IETF draft RateLimit fields)',
  'RateLimit-Remaining': 'requests left in the current window',
  'RateLimit-Reset': 'seconds until the window resets',
};

/**
 * The headers an answer of the route carries: X-Request-Id always, the RateLimit fields on
 * rate-limited routes, Retry-After on 429 and 503, Idempotent-Replayed on a replayed success, and
 * the route's own for that status.
 */
function headersOf(route: RouteDef, status: number, own: Record<string, string> = {}) {
  const headers: Record<string, { description: string; schema: { type: string } }> = {
    'X-Request-Id': stringHeader(REQUEST_ID_RULE),
  };
  if (!route.unlimited)
    for (const [name, description] of Object.entries(RATE_HEADERS))
      headers[name] = { description, schema: { type: 'integer' } };
  if (status === 429 || status === 503)
    headers['Retry-After'] = {
      description: 'seconds to wait before sending again',
      schema: { type: 'integer' },
    };
  if (route.idempotent && status < 300)
    headers['Idempotent-Replayed'] = stringHeader(
      'true: the stored answer of an earlier request with the same Idempotency-Key and body',
    );
  for (const [name, description] of Object.entries(own)) headers[name] = stringHeader(description);
  return headers;
}

function successResponse(response: ResponseDef, components: Record<string, unknown>) {
  const content: Record<string, unknown> = {};
  if (response.schema)
    content[response.contentType ?? 'application/json'] = {
      schema: toSchema(response.schema, 'output', components),
    };
  if (response.eventStream)
    content['text/event-stream'] = {
      schema: { type: 'string', description: response.eventStream.description },
    };
  return { description: response.description, ...(Object.keys(content).length ? { content } : {}) };
}

/**
 * A route's own responses, then the generic errors: where the route declares the same status
 * (400 aside, which it declares to say more), both descriptions are kept.
 */
function responsesOf(route: RouteDef, components: Record<string, unknown>) {
  const out: Record<string, unknown> = {};
  const errorRef = errorSchemaOf(route);
  for (const [status, response] of Object.entries(route.responses))
    out[status] =
      Number(status) >= 400
        ? errorResponse(response.description, errorRef)
        : successResponse(response, components);
  for (const [status, generic] of Object.entries(genericErrors(route))) {
    const own = route.responses[Number(status)]?.description;
    const description = own ? `${own}; ${generic}` : generic;
    out[status] = errorResponse(description, errorRef);
  }
  for (const status of Object.keys(out))
    out[status] = {
      ...(out[status] as object),
      headers: headersOf(route, Number(status), route.responses[Number(status)]?.headers),
    };
  return out;
}

/** x-required-scope, and x-accepted-scopes when any of several will do. */
const scopeExtensions = (scopes: string[]) => ({
  'x-required-scope': scopes[0],
  ...(scopes.length > 1 ? { 'x-accepted-scopes': scopes } : {}),
});

function operation(route: RouteDef, components: Record<string, unknown>) {
  return {
    summary: route.summary,
    tags: [route.tag],
    operationId: `${route.method.toLowerCase()}${route.path.replace(/[^A-Za-z0-9]+(\w)?/g, (_, c: string) => (c ?? '').toUpperCase())}`,
    ...(route.access.kind === 'public' ? { security: [] } : {}),
    ...(route.access.kind === 'scope' ? scopeExtensions(route.access.scopes) : {}),
    parameters: [
      ...pathParameters(route.path),
      ...objectParameters(route.query, 'query', components),
      ...objectParameters(route.headers, 'header', components),
      ...(route.idempotent ? [IDEMPOTENCY_KEY] : []),
    ],
    ...(route.body
      ? {
          requestBody: {
            required: !route.bodyOptional,
            content: { 'application/json': { schema: toSchema(route.body, 'input', components) } },
          },
        }
      : {}),
    responses: responsesOf(route, components),
  };
}

/** The OpenAPI 3.1 description, built from the same route table and zod schemas that serve requests. */
export function buildOpenApi(routes: RouteDef[]) {
  const paths: Record<string, Record<string, unknown>> = {};
  const schemas: Record<string, unknown> = {};
  // The error bodies are named (`Error`, `OpenAIError`): writing them files them under
  // components.schemas, where the error responses refer to them.
  toSchema(ErrorBody, 'output', schemas);
  toSchema(OpenAIErrorBody, 'output', schemas);
  for (const route of routes)
    (paths[route.path] ??= {})[route.method.toLowerCase()] = operation(route, schemas);
  return {
    openapi: '3.1.0',
    servers: [{ url: '/', description: 'the service that serves this document' }],
    info: {
      title: 'Control plane for governed LLM use',
      version: '1.0.0',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      description: [
        'JSON in and out; request bodies are strict (unknown fields are a validation_error), and so are',
        'the query strings of routes that read query parameters (a route that reads none ignores its query',
        'string). A query parameter given no value (`?status=`) is as if left out.',
        'A known path with another method is a 405 method_not_allowed with an Allow header.',
        'An id named in a body that is not found is a 404 not_found for the session or agent a request acts in',
        '(as in its path), and a 400 validation_error for a credential_ref.',
        'Every answer under /v1/ (any case) carries Cache-Control: no-store.',
        'Bodies are UTF-8 JSON (bytes that are not UTF-8 are an invalid_json): another charset or any Content-Encoding but identity is a 415, and an object',
        'that names a key twice is a validation_error (JSON.parse would keep the last; a reader of the request',
        'might take the first), as is a key named __proto__ anywhere in a body (it would be dropped unseen).',
        "Each operation's x-required-scope is the scope it needs (org:admin implies every scope); where any of",
        'several will do, x-accepted-scopes lists them all.',
        'Lists are newest first with `limit` (1..100, default 20) and an opaque `cursor`.',
        "Another org's resource answers 404.",
        'A request whose headers do not arrive within CP_HEADERS_TIMEOUT_MS (10 s), or whose whole body does',
        'not within CP_REQUEST_TIMEOUT_MS (30 s), is answered 408 request_timeout and its connection closed;',
        'the answer itself is not timed.',
        REQUEST_ID_RULE,
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
      schemas,
    },
    security: [{ bearer: [] }],
    paths,
  };
}
