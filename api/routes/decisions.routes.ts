import { notFound } from '../../domain/errors';
import { callOf } from '../http/call-context';
import { defineRoute, needs } from '../http/route';
import { presentDecision } from '../presenters';
import { decodeTimedCursor, encodeTimedCursor, listOf } from '../schemas/common';
import { DecisionQuery } from '../schemas/decisions.schemas';
import { DecisionView } from '../schemas/invocations.schemas';

const read = needs('audit:read');

const dateOrUndefined = (iso: string | undefined): Date | undefined => (iso ? new Date(iso) : undefined);

export const decisionRoutes = [
  defineRoute({
    method: 'GET',
    path: '/v1/acs/decisions',
    summary:
      "The org's guardian decisions (the decision log), newest first; filters combine with AND, `until` is exclusive",
    tag: 'guardian',
    access: read,
    query: DecisionQuery,
    responses: { 200: { description: 'a page of decisions', schema: listOf(DecisionView) } },
    handle: async (input) => {
      const { query } = input;
      const filter = {
        agentId: query.agent_id,
        sessionId: query.session_id,
        verdict: query.verdict,
        policyId: query.policy_id,
        since: dateOrUndefined(query.since),
        until: dateOrUndefined(query.until),
      };
      const page = await input.infra.decisionLog.list(callOf(input).principal.orgId, filter, {
        limit: query.limit,
        after: decodeTimedCursor(query.cursor, 'decisions'),
      });
      return {
        status: 200,
        body: {
          data: page.items.map(presentDecision),
          next_cursor: encodeTimedCursor(page.next, 'decisions'),
        },
      };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/acs/decisions/{id}',
    summary: 'One guardian decision: verdict, reasons, shadow reasons, policy version and action digest',
    tag: 'guardian',
    access: read,
    responses: {
      200: { description: 'the decision', schema: DecisionView },
      404: { description: 'no such decision in this org' },
    },
    handle: async (input) => {
      const decision = await input.infra.decisionLog.get(
        callOf(input).principal.orgId,
        input.params.id ?? '',
      );
      if (!decision) throw notFound('decision');
      return { status: 200, body: presentDecision(decision) };
    },
  }),
];
