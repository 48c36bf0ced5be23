import type { InvokeInput } from '../../domain/invocations/submit-invocation';
import type { ChatMessage } from '../../domain/providers';
import type { ChatCompletionRequest } from '../schemas/chat.schemas';

type WireMessage = ChatCompletionRequest['messages'][number];

/** Text parts are joined into one text; a null content (an assistant turn that only calls tools) is ''. */
const textOf = (content: WireMessage['content']): string =>
  typeof content === 'string' ? content : (content ?? []).map((p) => p.text).join('');

/** A Chat Completions message as the pipeline holds it; `developer` is a system turn. */
export const toMessage = (m: WireMessage): ChatMessage => ({
  role: m.role === 'developer' ? 'system' : m.role,
  content: textOf(m.content),
  ...(m.tool_calls ? { toolCalls: m.tool_calls } : {}),
  ...(m.tool_call_id !== undefined ? { toolCallId: m.tool_call_id } : {}),
});

/** What the agent passed to be kept with the invocation: `metadata`, and `user` in it. */
function metadataOf(body: ChatCompletionRequest): Record<string, unknown> | undefined {
  if (!body.metadata && body.user === undefined) return undefined;
  return { ...body.metadata, ...(body.user !== undefined ? { user: body.user } : {}) };
}

/**
 * `POST /v1/chat/completions` mapped onto the governed invoke: one pipeline after this point. The
 * session comes from `X-Session-Id`, the credential optionally from `X-Credential-Ref`.
 */
export function invokeInputOf(
  body: ChatCompletionRequest,
  headers: { sessionId: string; credentialRef: string | undefined },
  trace: Record<string, string>,
): InvokeInput {
  const metadata = metadataOf(body);
  return {
    sessionId: headers.sessionId,
    model: body.model,
    messages: body.messages.map(toMessage),
    maxTokens: (body.max_completion_tokens ?? body.max_tokens) as number,
    temperature: body.temperature ?? undefined,
    credentialRef: headers.credentialRef,
    tools: body.tools,
    toolChoice: body.tool_choice,
    stream: body.stream === true,
    ...(metadata ? { metadata } : {}),
    trace,
  };
}
