import {
  closeSession,
  getSession,
  listSessions,
  openSession,
  sessionHistory,
} from '../../domain/sessions/session-use-cases';
import { usdToMicros } from '../../domain/pricing/cost';
import { callOf } from '../http/call-context';
import { sessionDeps } from '../http/deps';
import { defineRoute, needs } from '../http/route';
import { presentHistoryItem, presentSession } from '../presenters';
import { decodeTimedCursor, encodeTimedCursor, listOf, pageReply, pageRequest } from '../schemas/common';
import {
  HistoryItemView,
  HistoryQuery,
  OpenSessionBody,
  SessionQuery,
  SessionView,
} from '../schemas/sessions.schemas';

const read = needs('sessions:read');
const write = needs('sessions:write');
const sessionPath = '/v1/sessions/{id}';
const notFound = { description: 'no such session in this org' };

export const sessionRoutes = [
  defineRoute({
    method: 'POST',
    path: '/v1/sessions',
    summary: 'Open a bounded, cost-capped session: invokes run in it and are charged against its caps',
    tag: 'sessions',
    access: write,
    idempotent: true,
    body: OpenSessionBody,
    responses: {
      201: { description: 'the open session', schema: SessionView },
      404: { description: 'agent_id names no agent of this org' },
      409: { description: 'invalid_state: the agent is suspended' },
    },
    handle: async (input) => {
      const { body } = input;
      const view = await openSession(sessionDeps(input.infra), callOf(input), {
        agentId: body.agent_id,
        maxCostMicros: usdToMicros(body.max_cost_usd),
        maxCalls: body.max_calls,
        maxTokens: body.max_tokens,
        ttlSeconds: body.ttl_seconds,
        metadata: body.metadata,
      });
      return { status: 201, body: presentSession(view) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/sessions',
    summary: 'List sessions, newest first, with live usage',
    tag: 'sessions',
    access: read,
    query: SessionQuery,
    responses: { 200: { description: 'a page of sessions', schema: listOf(SessionView) } },
    handle: async (input) => {
      const { query } = input;
      const page = await listSessions(
        sessionDeps(input.infra),
        callOf(input),
        { status: query.status, agentId: query.agent_id },
        pageRequest(query, 'sessions'),
      );
      return pageReply(page, presentSession, 'sessions');
    },
  }),
  defineRoute({
    method: 'GET',
    path: sessionPath,
    summary: 'Get a session with its live usage (settled cost and what in-flight invocations reserve)',
    tag: 'sessions',
    access: read,
    responses: { 200: { description: 'the session', schema: SessionView }, 404: notFound },
    handle: async (input) => {
      const view = await getSession(sessionDeps(input.infra), callOf(input), input.params.id ?? '');
      return { status: 200, body: presentSession(view) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${sessionPath}/history`,
    summary: "The session's invocations and guardian decisions, oldest first",
    tag: 'sessions',
    access: read,
    query: HistoryQuery,
    responses: {
      200: { description: 'a page of history items', schema: listOf(HistoryItemView) },
      404: notFound,
    },
    handle: async (input) => {
      const { items, next } = await sessionHistory(
        sessionDeps(input.infra),
        callOf(input),
        input.params.id ?? '',
        {
          limit: input.query.limit,
          after: decodeTimedCursor(input.query.cursor, 'history'),
        },
      );
      return {
        status: 200,
        body: {
          data: items.map(presentHistoryItem),
          next_cursor: encodeTimedCursor(next, 'history'),
        },
      };
    },
  }),
  defineRoute({
    method: 'POST',
    path: `${sessionPath}/close`,
    summary:
      'Close a session: no new invokes; invocations already running still finish and are charged; the approvals its invocations wait on are withdrawn (cancelled, the invocations failed session_not_open)',
    tag: 'sessions',
    access: write,
    responses: {
      200: { description: 'the closed session', schema: SessionView },
      404: notFound,
      409: { description: 'invalid_state: the session is already closed or expired' },
    },
    handle: async (input) => {
      const view = await closeSession(sessionDeps(input.infra), callOf(input), input.params.id ?? '');
      return { status: 200, body: presentSession(view) };
    },
  }),
];
