import { z } from 'zod';
import { getAgbom } from '../../domain/agents/agbom-use-case';
import {
  createAgent,
  getAgent,
  listAgents,
  patchAgent,
  setAgentStatus,
  type AgentPatch,
} from '../../domain/agents/agent-use-cases';
import { callOf } from '../http/call-context';
import { agentDeps } from '../http/deps';
import { defineRoute, needs } from '../http/route';
import { presentAgent } from '../presenters';
import { AgbomView, AgentView, CreateAgentBody, PatchAgentBody } from '../schemas/agents.schemas';
import { listOf, pageQuery, pageReply, pageRequest } from '../schemas/common';

const read = needs('agents:read');
const write = needs('agents:write');
const agentPath = '/v1/agents/{id}';
const notFound = { description: 'no such agent in this org' };

type AgentBody = z.infer<typeof CreateAgentBody>;

/** Body fields (snake_case) to domain fields; absent fields stay absent, so a patch leaves them be. */
function toFields(body: Partial<AgentBody>): AgentPatch {
  const fields: AgentPatch = {};
  if (body.name !== undefined) fields.name = body.name;
  if (body.description !== undefined) fields.description = body.description;
  if (body.owner !== undefined) fields.owner = body.owner;
  if (body.allowed_models !== undefined) fields.allowedModels = body.allowed_models;
  if (body.tools !== undefined) fields.tools = body.tools;
  if (body.credential_refs !== undefined) fields.credentialRefs = body.credential_refs;
  if (body.metadata !== undefined) fields.metadata = body.metadata;
  return fields;
}

const statusRoute = (action: 'suspend' | 'resume') =>
  defineRoute({
    method: 'POST',
    path: `${agentPath}/${action}`,
    summary:
      action === 'suspend'
        ? 'Suspend an agent: its new sessions and invokes are refused (409 invalid_state)'
        : 'Resume a suspended agent',
    tag: 'agents',
    access: write,
    responses: {
      200: { description: 'the agent', schema: AgentView },
      404: notFound,
      409: {
        description: `invalid_state: the agent is already ${action === 'suspend' ? 'suspended' : 'active'}`,
      },
    },
    handle: async (input) => {
      const status = action === 'suspend' ? 'suspended' : 'active';
      const agent = await setAgentStatus(
        agentDeps(input.infra),
        callOf(input),
        input.params.id ?? '',
        status,
      );
      return { status: 200, body: presentAgent(agent) };
    },
  });

export const agentRoutes = [
  defineRoute({
    method: 'POST',
    path: '/v1/agents',
    summary: 'Register an agent in the inventory',
    tag: 'agents',
    access: write,
    body: CreateAgentBody,
    responses: { 201: { description: 'created', schema: AgentView } },
    handle: async (input) => {
      const f = toFields(input.body);
      const agent = await createAgent(agentDeps(input.infra), callOf(input), {
        name: input.body.name,
        description: f.description ?? null,
        owner: f.owner ?? null,
        allowedModels: f.allowedModels ?? [],
        tools: f.tools ?? [],
        credentialRefs: f.credentialRefs ?? [],
        metadata: f.metadata ?? {},
      });
      return { status: 201, body: presentAgent(agent) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/agents',
    summary: 'List the agents of the org, newest first',
    tag: 'agents',
    access: read,
    query: z.object(pageQuery).strict(),
    responses: { 200: { description: 'a page of agents', schema: listOf(AgentView) } },
    handle: async (input) => {
      const page = await listAgents(
        agentDeps(input.infra),
        callOf(input),
        pageRequest(input.query, 'agents'),
      );
      return pageReply(page, presentAgent, 'agents');
    },
  }),
  defineRoute({
    method: 'GET',
    path: agentPath,
    summary: 'Get one agent',
    tag: 'agents',
    access: read,
    responses: { 200: { description: 'the agent', schema: AgentView }, 404: notFound },
    handle: async (input) => {
      const agent = await getAgent(agentDeps(input.infra), callOf(input), input.params.id ?? '');
      return { status: 200, body: presentAgent(agent) };
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: agentPath,
    summary: 'Change some fields of an agent; version goes up when anything changed',
    tag: 'agents',
    access: write,
    body: PatchAgentBody,
    responses: { 200: { description: 'the agent', schema: AgentView }, 404: notFound },
    handle: async (input) => {
      const agent = await patchAgent(
        agentDeps(input.infra),
        callOf(input),
        input.params.id ?? '',
        toFields(input.body),
      );
      return { status: 200, body: presentAgent(agent) };
    },
  }),
  statusRoute('suspend'),
  statusRoute('resume'),
  defineRoute({
    method: 'GET',
    path: `${agentPath}/agbom`,
    summary: "The agent's bill of materials, as a CycloneDX 1.6 JSON document",
    tag: 'agents',
    access: read,
    responses: {
      200: {
        description: 'the AGBOM',
        schema: AgbomView,
        contentType: 'application/vnd.cyclonedx+json; version=1.6',
      },
      404: notFound,
    },
    handle: async (input) => {
      const bom = await getAgbom(agentDeps(input.infra), callOf(input), input.params.id ?? '');
      return {
        status: 200,
        body: bom,
        headers: { 'Content-Type': 'application/vnd.cyclonedx+json; version=1.6' },
      };
    },
  }),
];
