import { z } from 'zod';
import { modelName } from './agents.schemas';
import { MAX_MESSAGES_BOUND } from './invocations.schemas';

/**
 * The Chat Completions request as the OpenAI SDKs and the frameworks on them send it. Parameters
 * this service does not act on (top_p, stop, seed, response_format, ...) are accepted and
 * ignored, so a client written for OpenAI needs no change; `n` above 1 is refused (one answer
 * per governed call). Text-part content is joined into one text.
 */
const MAX_TEXT_BYTES = 1024 * 1024;

const TextPart = z.object({ type: z.literal('text'), text: z.string() });

const Content = z
  .union([z.string(), z.array(TextPart).max(256)])
  .nullable()
  .optional()
  .meta({ description: 'Text, or text parts (joined). Images and audio are refused.' });

const WireToolCall = z.object({
  id: z.string().min(1).max(200),
  type: z.literal('function'),
  function: z.object({
    name: z.string().min(1).max(200),
    arguments: z.string().max(MAX_TEXT_BYTES),
  }),
});

export const ChatMessage = z.object({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
  content: Content,
  name: z.string().max(200).optional(),
  tool_calls: z.array(WireToolCall).max(128).optional(),
  tool_call_id: z.string().min(1).max(200).optional(),
});

export const FunctionTool = z.object({
  type: z.literal('function'),
  function: z.object({
    name: z.string().min(1).max(200),
    description: z.string().max(10_000).optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().nullable().optional(),
  }),
});

export const ToolChoice = z.union([
  z.enum(['none', 'auto', 'required']),
  z.object({ type: z.literal('function'), function: z.object({ name: z.string().min(1).max(200) }) }),
]);

const tokenLimit = z.number().int().min(1).max(1_000_000);

export const ChatCompletionBody = z
  .object({
    model: modelName,
    messages: z.array(ChatMessage).min(1).max(MAX_MESSAGES_BOUND),
    max_tokens: tokenLimit.nullable().optional(),
    max_completion_tokens: tokenLimit.nullable().optional(),
    temperature: z.number().min(0).max(2).nullable().optional(),
    tools: z.array(FunctionTool).max(128).optional(),
    tool_choice: ToolChoice.optional(),
    stream: z.boolean().nullable().optional(),
    stream_options: z.object({ include_usage: z.boolean().optional() }).nullable().optional(),
    n: z.literal(1).nullable().optional().meta({ description: 'One answer per call.' }),
    user: z.string().max(256).optional().meta({ description: 'Kept in the invocation metadata.' }),
    metadata: z.record(z.string().max(64), z.string().max(512)).optional(),
  })
  .refine((b) => (b.max_tokens ?? b.max_completion_tokens) != null, {
    path: ['max_tokens'],
    message:
      'max_tokens or max_completion_tokens is required: the worst case reserved against the session counts all of it',
  });

export type ChatCompletionRequest = z.infer<typeof ChatCompletionBody>;

const Usage = z.object({
  prompt_tokens: z.number(),
  completion_tokens: z.number(),
  total_tokens: z.number(),
});

export const ChatCompletionView = z
  .object({
    id: z.string().meta({ description: 'The invocation id (also in the X-Invocation-Id header).' }),
    object: z.literal('chat.completion'),
    created: z.number().int(),
    model: z.string(),
    choices: z.array(
      z.object({
        index: z.number().int(),
        message: z.object({
          role: z.literal('assistant'),
          content: z.string().nullable(),
          tool_calls: z.array(WireToolCall).optional(),
        }),
        finish_reason: z.string(),
      }),
    ),
    usage: Usage,
  })
  .meta({ id: 'ChatCompletion' });

export const ModelView = z
  .object({ id: z.string(), object: z.literal('model'), created: z.number(), owned_by: z.string() })
  .meta({ id: 'Model' });

export const ModelList = z
  .object({ object: z.literal('list'), data: z.array(ModelView) })
  .meta({ id: 'ModelList' });

/** An id sent in a header: what the handler accepts (api/routes/chat.routes.ts reads it by this). */
const headerId = z
  .string()
  .max(100)
  .regex(/^[\w-]+$/)
  .optional();

const sessionHeader = (description: string) => ({ 'X-Session-Id': headerId.meta({ description }) });

export const ChatHeaders = z.object({
  ...sessionHeader(
    'The session the call is charged to: required unless X-Invocation-Id is sent (400 validation_error without either).',
  ),
  'X-Credential-Ref': headerId.meta({
    description:
      "The credential to call the provider with, as credential_ref does; else the agent's default.",
  }),
  'X-Invocation-Id': headerId.meta({
    description:
      'Goes on waiting for the invocation a previous request started (after 409 approval_pending or ' +
      'invocation_pending) instead of submitting anew. The body must be that request (the same model, ' +
      'messages, max_tokens or max_completion_tokens, tools and tool_choice; stream and temperature may ' +
      'differ), else 400 validation_error with param X-Invocation-Id. X-Session-Id is then not needed; ' +
      "sent, it must be the invocation's session (400 validation_error otherwise).",
  }),
});

export const ModelHeaders = z.object(
  sessionHeader("Only the models this session's agent may call; without it, every model with a price."),
);

export type HeaderName = keyof typeof ChatHeaders.shape;
