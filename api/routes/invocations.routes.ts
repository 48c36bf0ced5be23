import { cancelInvocation } from '../../domain/invocations/cancel-invocation';
import { getInvocation, listInvocations } from '../../domain/invocations/read-invocations';
import type { InvocationSummary } from '../../domain/invocations/invocation';
import { isTerminal } from '../../domain/invocations/lifecycle';
import { invoke } from '../../domain/invocations/submit-invocation';
import { invalidField } from '../../domain/errors';
import { callOf } from '../http/call-context';
import { cancelDeps, invokeDeps, readDeps } from '../http/deps';
import { defineRoute, needs, needsAnyOf, type RouteInput } from '../http/route';
import { presentInvocation } from '../presenters';
import { listOf, pageReply, pageRequest } from '../schemas/common';
import {
  InvocationQuery,
  InvocationView,
  InvokeBody,
  PreferHeaders,
  WaitQuery,
} from '../schemas/invocations.schemas';

const invocationPath = '/v1/llm/invocations/{id}';
const readers = needsAnyOf('llm:invoke', 'sessions:read');
const notFound = { description: 'no such invocation in this org' };

/** RFC 7240 `Prefer: wait=N`; like any preference, an out-of-range value is bounded, not refused. */
const PREFER_WAIT = /(?:^|[,;\s])wait\s*=\s*(\d+)(?:$|[,;\s])/i;

/**
 * Seconds to wait: the `wait` query (0..max_wait_seconds, else 400), or else `Prefer: wait=N`
 * (bounded to max_wait_seconds). `preferred` says the header was honoured.
 */
function waitOf(input: RouteInput<unknown, { wait?: number | undefined }>): {
  seconds: number;
  preferred: boolean;
} {
  const max = input.infra.config.CP_MAX_WAIT_SECONDS;
  const asked = input.query.wait;
  if (asked !== undefined) {
    if (asked > max) throw invalidField('wait', `wait: at most ${max} seconds (limits.max_wait_seconds)`);
    return { seconds: asked, preferred: false };
  }
  const prefer = PREFER_WAIT.exec(input.header('Prefer'));
  return prefer
    ? { seconds: Math.min(Number(prefer[1]), max), preferred: true }
    : { seconds: 0, preferred: false };
}

const preferenceApplied = (wait: { seconds: number; preferred: boolean }): Record<string, string> =>
  wait.preferred ? { 'Preference-Applied': `wait=${wait.seconds}` } : {};

const INVOKE_HEADERS = {
  Location: 'the invocation: /v1/llm/invocations/{id}, to poll (with wait) until it finishes',
  'Preference-Applied': 'wait=N: the Prefer: wait=N header was honoured, with N the seconds waited at most',
};

/** 200 once finished, 202 (with where to poll) while not. */
const invokeReply = (invocation: InvocationSummary, wait: { seconds: number; preferred: boolean }) => ({
  status: isTerminal(invocation.status) ? 200 : 202,
  body: presentInvocation(invocation),
  headers: { Location: `/v1/llm/invocations/${invocation.id}`, ...preferenceApplied(wait) },
});

export const invocationRoutes = [
  defineRoute({
    method: 'POST',
    path: '/v1/llm/invoke',
    summary:
      'Run a governed completion: checked by the guardian, charged against the session caps, audited. ' +
      'Answers 202 at once, or waits up to `wait` seconds (or Prefer: wait=N) and answers 200 if it finished.',
    tag: 'invoke',
    access: needs('llm:invoke'),
    idempotent: true,
    body: InvokeBody,
    query: WaitQuery,
    headers: PreferHeaders,
    responses: {
      200: {
        description:
          'finished within the wait (succeeded, failed, denied or cancelled). With an agent, the ' +
          "guardian denies (credential_not_allowed) a credential_ref outside the agent's credential_refs; " +
          'an agent with none may use no credential.',
        schema: InvocationView,
        headers: INVOKE_HEADERS,
      },
      202: {
        description:
          'accepted and not finished yet; poll Location. The invocation is recorded and will run: if the ' +
          'job queue is briefly unreachable (Redis just restarted), it stays queued (the wait is skipped) ' +
          'until the reaper enqueues it, within CP_REAP_AFTER_MS plus 10 s. A Redis failure after the ' +
          'invocation is recorded never turns this answer into a 503.',
        schema: InvocationView,
        headers: INVOKE_HEADERS,
      },
      400: { description: 'validation_error, or unpriced_model (with model)' },
      402: {
        description:
          'budget_exceeded: a cap of the session is reached, or what it has left (settled usage and calls in flight) cannot hold this call at its worst case (see the README: the worst-case reservation)',
      },
      404: { description: 'the session (or the agent named) does not exist in this org' },
      409: { description: 'session_not_open (closed or expired), or invalid_state (the agent is suspended)' },
    },
    handle: async (input) => {
      const { body, created } = input;
      const wait = waitOf(input);
      const invocation = await invoke(
        invokeDeps(input.infra),
        callOf(input),
        {
          sessionId: body.session_id,
          model: body.model,
          messages: body.messages,
          maxTokens: body.max_tokens,
          temperature: body.temperature,
          credentialRef: body.credential_ref,
          agentId: body.agent_id,
          tool: body.tool,
          metadata: body.metadata,
          trace: input.trace,
        },
        wait.seconds * 1000,
        // The answer a retry under its Idempotency-Key gets should this process die while waiting.
        created && ((queued) => created(invokeReply(queued, wait))),
      );
      return invokeReply(invocation, wait);
    },
  }),
  defineRoute({
    method: 'GET',
    path: invocationPath,
    summary:
      'Get an invocation; with `wait` (or Prefer: wait=N), long-poll until it finishes or the wait runs out',
    tag: 'invoke',
    access: readers,
    query: WaitQuery,
    headers: PreferHeaders,
    responses: { 200: { description: 'the invocation as it is now', schema: InvocationView }, 404: notFound },
    handle: async (input) => {
      const wait = waitOf(input);
      const invocation = await getInvocation(
        readDeps(input.infra),
        callOf(input),
        input.params.id ?? '',
        wait.seconds * 1000,
      );
      return { status: 200, body: presentInvocation(invocation), headers: preferenceApplied(wait) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/llm/invocations',
    summary: 'List invocations, newest first; filter by session_id and status',
    tag: 'invoke',
    access: readers,
    query: InvocationQuery,
    responses: { 200: { description: 'a page of invocations', schema: listOf(InvocationView) } },
    handle: async (input) => {
      const { query } = input;
      const page = await listInvocations(
        input.infra.invocations,
        callOf(input),
        { sessionId: query.session_id, status: query.status },
        pageRequest(query, 'invocations'),
      );
      return pageReply(page, presentInvocation, 'invocations');
    },
  }),
  defineRoute({
    method: 'POST',
    path: `${invocationPath}/cancel`,
    summary: 'Cancel an invocation before the provider is called (queued, evaluating or awaiting approval)',
    tag: 'invoke',
    access: needs('llm:invoke'),
    responses: {
      200: { description: 'the cancelled invocation', schema: InvocationView },
      404: notFound,
      409: { description: 'invalid_state: it is running or finished (status says which)' },
    },
    handle: async (input) => {
      const invocation = await cancelInvocation(
        cancelDeps(input.infra),
        callOf(input),
        input.params.id ?? '',
      );
      return { status: 200, body: presentInvocation(invocation) };
    },
  }),
];
