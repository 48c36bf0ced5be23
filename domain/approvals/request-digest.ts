import type { Invocation, InvocationRequest } from '../invocations/invocation';
import { actionDigest } from '../policy/action-digest';

/**
 * SHA-256 (hex) of what an invocation will send the provider: model, credential and the request
 * as it will run (after redactions and clamps). An approval is a vote on exactly this; a resumed
 * invocation whose row no longer hashes to it does not run.
 */
export const requestDigest = (
  invocation: Pick<Invocation, 'model' | 'credentialRef'>,
  request: InvocationRequest,
): string =>
  actionDigest({
    model: invocation.model,
    credential_ref: invocation.credentialRef,
    messages: request.messages,
    max_tokens: request.maxTokens,
    temperature: request.temperature ?? null,
    tool: request.tool ?? null,
    tools: request.tools ?? null,
    tool_choice: request.toolChoice ?? null,
  });
