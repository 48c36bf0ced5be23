import { invalidState, notFound } from '../errors';
import type { AgentStatus } from '../model';

/**
 * The agent a session or an invoke acts for: it must exist in the org (404) and be active
 * (409 invalid_state; a suspended agent can be resumed). `doing` ends the message.
 */
export function activeAgent<A extends { id: string; status: AgentStatus }>(
  agent: A | null,
  doing: string,
): A {
  if (!agent) throw notFound('agent');
  if (agent.status === 'suspended')
    throw invalidState('suspended', `agent ${agent.id} is suspended; resume it before ${doing}`);
  return agent;
}
