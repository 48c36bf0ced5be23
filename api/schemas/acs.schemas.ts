import { z } from 'zod';
import type { Action } from '../../domain/policy/policy';
import { modelName } from './agents.schemas';
import { toMessage } from '../chat/chat-request';
import { ChatMessage, FunctionTool, ToolChoice } from './chat.schemas';
import { ToolCall } from './invocations.schemas';

const id = z.string().min(1).max(100);

export const EvaluateBody = z
  .object({
    agent_id: id.optional().meta({ description: "Defaults to the session's agent, if a session is named." }),
    session_id: id.optional(),
    action: z
      .object({
        type: z
          .string()
          .trim()
          .min(1)
          .max(100)
          .meta({ description: '"llm.invoke", "tool.call" or any action type the policies name.' }),
        model: modelName.optional(),
        messages: z.array(ChatMessage).max(256).optional().meta({
          description:
            'As an invoke sends them, or as /v1/chat/completions does (tool_calls, tool_call_id, the developer role, text parts), so that what a chat call would be decided can be asked; as there, keys a message may carry that the engine does not read (refusal, audio, ...) are ignored. modified_action answers them in the same spelling, as the engine holds them: a developer turn as system, text parts joined, a null content as "".',
        }),
        max_tokens: z.number().int().min(1).max(1_000_000).optional(),
        tool: ToolCall.optional(),
        tools: z.array(FunctionTool).max(128).optional().meta({
          description: 'The function tools a chat call offers the model (tool rules judge their names).',
        }),
        tool_choice: ToolChoice.optional(),
        estimated_cost_usd: z.number().min(0).max(1_000_000).optional().meta({
          description: 'What cost rules judge; an llm.invoke without it fails max_cost_per_call_usd closed.',
        }),
      })
      .strict(),
  })
  .strict();

/** An action as the API takes it (snake_case) to the engine's. */
export const actionOf = (a: z.infer<typeof EvaluateBody>['action']): Action => ({
  type: a.type,
  ...(a.model !== undefined ? { model: a.model } : {}),
  ...(a.messages !== undefined ? { messages: a.messages.map(toMessage) } : {}),
  ...(a.max_tokens !== undefined ? { maxTokens: a.max_tokens } : {}),
  ...(a.tool !== undefined ? { tool: a.tool } : {}),
  ...(a.tools?.length ? { offeredTools: a.tools } : {}),
  ...(a.tool_choice !== undefined ? { toolChoice: a.tool_choice } : {}),
  ...(a.estimated_cost_usd !== undefined ? { estimatedCostUsd: a.estimated_cost_usd } : {}),
});
