import { invalidField, notFound } from '../../domain/errors';
import { getInvocation } from '../../domain/invocations/read-invocations';
import type { Invocation } from '../../domain/invocations/invocation';
import { assertSameRequest } from '../../domain/invocations/same-request';
import { invoke, requestOf } from '../../domain/invocations/submit-invocation';
import type { Infra } from '../../infra/container';
import { completionOf, invocationHeaders, refusalOf } from '../chat/chat-replies';
import { invokeInputOf } from '../chat/chat-request';
import { streamCompletion, type RunWith } from '../chat/chat-stream';
import { callableModels, modelView } from '../chat/model-list';
import { callOf } from '../http/call-context';
import { invokeDeps, readDeps } from '../http/deps';
import { defineRoute, needs, type RouteInput } from '../http/route';
import {
  ChatCompletionBody,
  ChatCompletionView,
  ChatHeaders,
  ModelHeaders,
  ModelList,
  ModelView,
  type ChatCompletionRequest,
  type HeaderName,
} from '../schemas/chat.schemas';

/** An id header, checked by its declaration in ChatHeaders; undefined when absent. */
function headerId(
  input: RouteInput<unknown, unknown>,
  name: HeaderName,
  required: boolean,
): string | undefined {
  const value = input.header(name).trim();
  if (!value && required) throw invalidField(name, `${name}: required (the session this call is charged to)`);
  if (value && !ChatHeaders.shape[name].safeParse(value).success)
    throw invalidField(name, `${name}: not an id`);
  return value || undefined;
}

/**
 * A resume names the invocation's own session, or none: a client that names one session and
 * resumes another's invocation would be told of a charge it did not expect. And it sends the
 * request that started the invocation, or it would be answered another prompt's completion.
 */
const resumable =
  (input: RouteInput<ChatCompletionRequest, unknown>, sessionId: string | undefined) =>
  async (invocation: Invocation): Promise<void> => {
    if (sessionId && invocation.sessionId !== sessionId)
      throw invalidField(
        'X-Session-Id',
        `X-Session-Id: invocation ${invocation.id} is in session ${invocation.sessionId}, not ${sessionId}; ` +
          'resume it with its own session, or leave X-Session-Id out',
      );
    const asked = invokeInputOf(
      input.body,
      { sessionId: invocation.sessionId, credentialRef: undefined },
      {},
    );
    await assertSameRequest(input.infra.decisionLog, invocation, {
      model: asked.model,
      request: requestOf(asked),
    });
  };

/**
 * Runs the request as a governed invoke (or, with X-Invocation-Id, goes on waiting for the one it
 * started), waiting through `waiter` for up to `ms`.
 */
function runner(input: RouteInput<ChatCompletionRequest, unknown>, ms: number): RunWith {
  const ctx = callOf(input);
  const resume = headerId(input, 'X-Invocation-Id', false);
  const sessionId = headerId(input, 'X-Session-Id', !resume);
  const credentialRef = headerId(input, 'X-Credential-Ref', false);
  return (waiter) =>
    resume
      ? getInvocation({ ...readDeps(input.infra), waiter }, ctx, resume, ms, resumable(input, sessionId))
      : invoke(
          { ...invokeDeps(input.infra), waiter },
          ctx,
          invokeInputOf(input.body, { sessionId: sessionId as string, credentialRef }, input.trace),
          ms,
        );
}

const streamDeps = (input: RouteInput<ChatCompletionRequest, unknown>, infra: Infra) => ({
  follow: infra.completions.follow.bind(infra.completions),
  abort: infra.completions.abort.bind(infra.completions),
  begun: infra.completions.begun.bind(infra.completions),
  read: (id: string) => infra.invocations.get(callOf(input).principal.orgId, id),
  maxWaitMs: infra.config.CP_MAX_WAIT_SECONDS * 1000,
  streamMs:
    infra.config.CP_MAX_WAIT_SECONDS * 1000 +
    infra.config.CP_PROVIDER_TIMEOUT_MS * infra.config.CP_INVOKE_ATTEMPTS,
  includeUsage: input.body.stream_options?.include_usage === true,
  model: headerId(input, 'X-Invocation-Id', false) ? null : input.body.model,
  requestId: input.requestId,
  closed: input.closed,
  onError: (err: unknown) => infra.logger.warn({ err }, 'chat completion stream ended early'),
});

/** A chat completion, answered whole or streamed. */
async function complete(input: RouteInput<ChatCompletionRequest, unknown>) {
  const { infra } = input;
  if (input.body.stream) {
    const deps = streamDeps(input, infra);
    return streamCompletion(deps, runner(input, deps.streamMs));
  }
  const invocation = await runner(input, infra.config.CP_MAX_WAIT_SECONDS * 1000)(infra.completions);
  if (invocation.status !== 'succeeded') return refusalOf(invocation, input.requestId);
  return { status: 200, body: completionOf(invocation), headers: invocationHeaders(invocation) };
}

export const chatRoutes = [
  defineRoute({
    method: 'POST',
    path: '/v1/chat/completions',
    summary:
      'OpenAI-compatible Chat Completions, governed exactly as POST /v1/llm/invoke (guardian, caps, approvals, ' +
      'audit). The API key is the csk_ key; X-Session-Id names the session (required unless X-Invocation-Id ' +
      "is sent; sent with it, it must be that invocation's session, else 400 validation_error), " +
      'X-Credential-Ref optionally the credential. stream: true answers server-sent ' +
      "chat.completion.chunk events. Errors are OpenAI-shaped ({ error: { message, type, code, param } }) with the contract's " +
      'statuses and codes; those a retry cannot change carry x-should-retry: false. A request an approval ' +
      'holds waits up to max_wait_seconds, then answers 409 approval_pending (param: the approval id); the ' +
      'same request with X-Invocation-Id goes on waiting (it only watches: its hang-up stops nothing). ' +
      'Idempotency-Key is not read here.',
    tag: 'openai',
    access: needs('llm:invoke'),
    errorShape: 'openai',
    body: ChatCompletionBody,
    headers: ChatHeaders,
    responses: {
      200: {
        description:
          'the completion (headers X-Invocation-Id, X-Cost-Usd), or with stream: true an event stream',
        schema: ChatCompletionView,
        headers: {
          'X-Invocation-Id': 'the governed invocation behind the completion (GET /v1/llm/invocations/{id})',
          'X-Cost-Usd':
            'what the call was charged, in US dollars (not sent on a stream, whose cost is known at its end)',
        },
        eventStream: {
          description:
            'Server-sent events: `data: <chat.completion.chunk JSON>` per piece, each naming the model; then ' +
            'one with finish_reason, one with usage when stream_options.include_usage, and `data: [DONE]`. An ' +
            'error after the first event is sent as `data: <the OpenAI error JSON>` before [DONE]. Pieces after ' +
            'the first are joined and sent at most every 20 ms. A request resumed with X-Invocation-Id after ' +
            'pieces went out gets the answer whole at the end. A client that hangs up stops the provider call ' +
            '(one waiting for approval is left to the approvers).',
        },
      },
      400: {
        description:
          'validation_error (X-Session-Id missing, no max_tokens, X-Invocation-Id sent with another request ' +
          'than the one that started that invocation, ...) or unpriced_model',
      },
      402: {
        description:
          'budget_exceeded: a cap of the session is reached, or what it has left cannot hold this call at its worst case',
      },
      403: {
        description:
          "the guardian denied it: code is its first reason's code; approval_rejected; approval_expired",
      },
      404: { description: 'the session does not exist in this org' },
      409: {
        description:
          'session_not_open; approval_pending (param: the approval id); invocation_pending (param: the ' +
          'invocation id); invalid_state (the invocation was cancelled)',
        headers: {
          'X-Invocation-Id':
            'approval_pending, invocation_pending: the invocation; send it back to go on waiting',
          'X-Cost-Usd': 'what the invocation was charged so far',
        },
      },
      502: { description: 'the provider failed: code is the provider error (provider_timeout, ...)' },
    },
    handle: complete,
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/models',
    summary:
      "OpenAI-compatible model list: every model with a price (built-in or the org's own), and with " +
      "X-Session-Id only those the session's agent may call",
    tag: 'openai',
    access: needs('llm:invoke'),
    errorShape: 'openai',
    headers: ModelHeaders,
    responses: {
      200: { description: 'the models', schema: ModelList },
      400: { description: 'validation_error: X-Session-Id is not an id' },
      404: { description: 'not_found: no session X-Session-Id in this org' },
    },
    handle: async (input) => {
      const models = await callableModels(input.infra, callOf(input), headerId(input, 'X-Session-Id', false));
      return { status: 200, body: { object: 'list', data: models.map(modelView) } };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/models/{id}',
    summary:
      "OpenAI-compatible model retrieval (the SDKs' models.retrieve): the model when GET /v1/models would " +
      "list it (one with a price, and with X-Session-Id one the session's agent may call), else 404 " +
      'not_found naming it. A name with a slash is sent encoded (%2F), as the SDKs do.',
    tag: 'openai',
    access: needs('llm:invoke'),
    errorShape: 'openai',
    headers: ModelHeaders,
    responses: {
      200: { description: 'the model', schema: ModelView },
      404: { description: 'not_found: no such model here, or the session does not exist in this org' },
    },
    handle: async (input) => {
      const id = input.params.id ?? '';
      const models = await callableModels(input.infra, callOf(input), headerId(input, 'X-Session-Id', false));
      if (!models.includes(id)) throw notFound(`model ${id}`);
      return { status: 200, body: modelView(id) };
    },
  }),
];
