import { invalidField, notFound } from '../../domain/errors';
import { getInvocation } from '../../domain/invocations/read-invocations';
import { invoke } from '../../domain/invocations/submit-invocation';
import { listPrices } from '../../domain/pricing/price-use-cases';
import type { Infra } from '../../infra/container';
import { completionOf, invocationHeaders, refusalOf } from '../chat/chat-replies';
import { invokeInputOf } from '../chat/chat-request';
import { streamCompletion, type RunWith } from '../chat/chat-stream';
import { callOf } from '../http/call-context';
import { invokeDeps, priceDeps, readDeps } from '../http/deps';
import { defineRoute, needs, type RouteInput } from '../http/route';
import {
  ChatCompletionBody,
  ChatCompletionView,
  ModelList,
  type ChatCompletionRequest,
} from '../schemas/chat.schemas';

const MAX_HEADER_ID = 100;

function headerId(input: RouteInput<unknown, unknown>, name: string, required: boolean): string | undefined {
  const value = input.header(name).trim();
  if (!value && required) throw invalidField(name, `${name}: required (the session this call is charged to)`);
  if (value.length > MAX_HEADER_ID || /[^\w-]/.test(value)) throw invalidField(name, `${name}: not an id`);
  return value || undefined;
}

/**
 * Runs the request as a governed invoke (or, with X-Invocation-Id, goes on waiting for the one it
 * started), waiting through `waiter` for up to `ms`.
 */
function runner(input: RouteInput<ChatCompletionRequest, unknown>, ms: number): RunWith {
  const ctx = callOf(input);
  const resume = headerId(input, 'X-Invocation-Id', false);
  const sessionId = resume ? '' : (headerId(input, 'X-Session-Id', true) as string);
  const credentialRef = headerId(input, 'X-Credential-Ref', false);
  return (waiter) =>
    resume
      ? getInvocation({ ...readDeps(input.infra), waiter }, ctx, resume, ms)
      : invoke(
          { ...invokeDeps(input.infra), waiter },
          ctx,
          invokeInputOf(input.body, { sessionId, credentialRef }, input.trace),
          ms,
        );
}

const streamDeps = (input: RouteInput<ChatCompletionRequest, unknown>, infra: Infra) => ({
  follow: infra.completions.follow.bind(infra.completions),
  abort: infra.completions.abort.bind(infra.completions),
  read: (id: string) => infra.invocations.get(callOf(input).principal.orgId, id),
  maxWaitMs: infra.config.CP_MAX_WAIT_SECONDS * 1000,
  streamMs:
    infra.config.CP_MAX_WAIT_SECONDS * 1000 +
    infra.config.CP_PROVIDER_TIMEOUT_MS * infra.config.CP_INVOKE_ATTEMPTS,
  includeUsage: input.body.stream_options?.include_usage === true,
  closed: input.closed,
  onError: (err: unknown) => infra.logger.warn({ err }, 'chat completion stream ended early'),
});

export const chatRoutes = [
  defineRoute({
    method: 'POST',
    path: '/v1/chat/completions',
    summary:
      'OpenAI-compatible Chat Completions, governed exactly as POST /v1/llm/invoke (guardian, caps, approvals, ' +
      'audit). The API key is the csk_ key; X-Session-Id names the session (required), X-Credential-Ref ' +
      'optionally the credential. stream: true answers server-sent chat.completion.chunk events. Errors are ' +
      "OpenAI-shaped ({ error: { message, type, code, param } }) with the contract's statuses and codes. A " +
      'request an approval holds waits up to max_wait_seconds, then answers 409 approval_pending (param: the ' +
      'approval id); the same request with X-Invocation-Id goes on waiting.',
    tag: 'openai',
    access: needs('llm:invoke'),
    errorShape: 'openai',
    body: ChatCompletionBody,
    responses: {
      200: {
        description: 'the completion (headers X-Invocation-Id, X-Cost-Usd), or a text/event-stream',
        schema: ChatCompletionView,
      },
      400: { description: 'validation_error (X-Session-Id missing, no max_tokens, ...) or unpriced_model' },
      402: { description: 'budget_exceeded' },
      403: {
        description:
          "the guardian denied it: code is its first reason's code; approval_rejected; approval_expired",
      },
      404: { description: 'the session does not exist in this org' },
      409: {
        description:
          'session_not_open; approval_pending (param: the approval id); invocation_pending (param: the invocation id)',
      },
      502: { description: 'the provider failed: code is the provider error (provider_timeout, ...)' },
    },
    handle: async (input) => {
      const { infra } = input;
      if (input.body.stream) {
        const deps = streamDeps(input, infra);
        return streamCompletion(deps, runner(input, deps.streamMs));
      }
      const invocation = await runner(input, infra.config.CP_MAX_WAIT_SECONDS * 1000)(infra.completions);
      if (invocation.status !== 'succeeded') return refusalOf(invocation);
      return { status: 200, body: completionOf(invocation), headers: invocationHeaders(invocation) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/models',
    summary:
      "OpenAI-compatible model list: with X-Session-Id, the models the session's agent may call; otherwise " +
      "every model with a price (built-in or the org's own)",
    tag: 'openai',
    access: needs('llm:invoke'),
    errorShape: 'openai',
    responses: { 200: { description: 'the models', schema: ModelList } },
    handle: async (input) => {
      const ctx = callOf(input);
      const sessionId = headerId(input, 'X-Session-Id', false);
      const models = sessionId ? await agentModels(input.infra, ctx.principal.orgId, sessionId) : null;
      const names = models ?? (await listPrices(priceDeps(input.infra), ctx)).map((p) => p.model);
      return {
        status: 200,
        body: {
          object: 'list',
          data: [...new Set(names)]
            .sort()
            .map((id) => ({ id, object: 'model', created: 0, owned_by: 'control-plane' })),
        },
      };
    },
  }),
];

/** The session's agent's allowed models; null when the session has no agent (every priced model). */
async function agentModels(infra: Infra, orgId: string, sessionId: string): Promise<string[] | null> {
  const context = await infra.invocations.invokeContext(orgId, {
    sessionId,
    agentId: null,
    credentialRef: null,
    model: '',
  });
  if (!context.session) throw notFound('session');
  return context.agent ? context.agent.allowedModels : null;
}
