import type { z } from 'zod';
import type { Principal } from '../../domain/principal';
import type { Scope } from '../../domain/scopes';
import type { Infra } from '../../infra/container';

/**
 * Who may call a route, declared in one place per route: public, any valid token, or a token
 * holding one of `scopes` (usually just one; org:admin implies every scope).
 */
export type Access =
  { kind: 'public' } | { kind: 'authenticated' } | { kind: 'scope'; scopes: [Scope, ...Scope[]] };

export const PUBLIC: Access = { kind: 'public' };
export const AUTHENTICATED: Access = { kind: 'authenticated' };
export const needs = (scope: Scope): Access => ({ kind: 'scope', scopes: [scope] });
export const needsAnyOf = (...scopes: [Scope, ...Scope[]]): Access => ({ kind: 'scope', scopes });

export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface RouteInput<B, Q> {
  body: B;
  query: Q;
  params: Record<string, string>;
  /** Null on public routes only. */
  principal: Principal | null;
  requestId: string;
  ip: string;
  /** A request header ('' when absent). */
  header(name: string): string;
  /** W3C trace context of the request's span, for work it hands on (jobs). */
  trace: Record<string, string>;
  /** Aborts when the client hangs up before the answer is complete (a stream it stopped reading). */
  closed: AbortSignal;
  /**
   * With an Idempotency-Key: records the answer a retry gets if this process dies before it
   * answers, once the resource exists (see idempotency.ts). Absent without a key.
   */
  created?: ((reply: Reply) => Promise<void>) | undefined;
  infra: Infra;
}

/** One documented answer of a route. */
export interface ResponseDef {
  description: string;
  schema?: z.ZodType;
  /** The body's media type when it is not `application/json` (the AGBOM's CycloneDX type). */
  contentType?: string;
  /** Also answered as server-sent events (`stream: true`): what the events hold. */
  eventStream?: { description: string };
  /** Headers of this answer beyond those every answer carries (X-Request-Id, RateLimit-*): name → meaning. */
  headers?: Record<string, string>;
}

export interface RouteDef<B extends z.ZodType = z.ZodType, Q extends z.ZodType = z.ZodType> {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** OpenAPI style: `/v1/keys/{id}`. */
  path: string;
  summary: string;
  tag: string;
  access: Access;
  body?: B;
  /** Probes are not rate limited: they must answer load balancers, also while Redis is down. */
  unlimited?: boolean;
  /**
   * Limited per key only, not per org: revoking a key must work while the org's other keys have
   * spent its limit (the key being revoked, say).
   */
  outsideOrgLimit?: boolean;
  /** Honours `Idempotency-Key` (authenticated routes only). */
  idempotent?: boolean;
  /** When true a body is optional (a missing body validates as `{}`). */
  bodyOptional?: boolean;
  /**
   * Awaited with the body as received, before its schema runs: checks the schema would make in one
   * piece of the event loop, answered first in turns (a policy's patterns).
   */
  prepare?: (input: { raw: unknown; principal: Principal | null; infra: Infra }) => Promise<void>;
  /** Errors in OpenAI's shape (`{ error: { message, type, code, param } }`), for the OpenAI-compatible routes. */
  errorShape?: 'openai';
  query?: Q;
  /**
   * The request headers the handler reads (through `header(name)`), documented as header
   * parameters: one optional string schema per header name, with its description.
   */
  headers?: z.ZodObject;
  responses: Record<number, ResponseDef>;
  handle(input: RouteInput<z.infer<B>, z.infer<Q>>): Promise<Reply>;
}

/**
 * Sees every reply a route returns, before it is written. The test app installs one that holds each
 * reply to the schema its route documents, so every integration test also checks the OpenAPI
 * description against what the service really answers.
 */
export type ReplyCheck = (route: RouteDef, reply: Reply) => void;

/** Keeps the body and query types of a route's handler tied to its schemas. */
export const defineRoute = <B extends z.ZodType = z.ZodUnknown, Q extends z.ZodType = z.ZodUnknown>(
  route: RouteDef<B, Q>,
): RouteDef => route as unknown as RouteDef;
