import { Command } from 'commander';
import type { Agbom, Agent } from '../../types';
import { action } from '../call';
import { list, record, table, when } from '../format';
import { jsonObject, words } from '../parsers';
import type { RunState } from '../state';

interface CreateOptions {
  name: string;
  description?: string;
  owner?: string;
  allowedModels?: string[];
  tools?: string[];
  credentialRefs?: string[];
  metadata?: Record<string, unknown>;
}

const agentRecord = (a: Agent) =>
  record([
    ['id', a.id],
    ['name', a.name],
    ['status', a.status],
    ['owner', a.owner],
    ['allowed_models', list(a.allowed_models)],
    ['tools', list(a.tools.map((t) => (t.version ? `${t.name}@${t.version}` : t.name)))],
    ['credential_refs', list(a.credential_refs)],
    ['version', a.version],
    ['created_at', when(a.created_at)],
  ]);

/** `name@version` (the version optional) to the API's tool object. */
const tool = (spec: string) => {
  const at = spec.lastIndexOf('@');
  return at > 0 ? { name: spec.slice(0, at), version: spec.slice(at + 1) } : { name: spec };
};

/** The models, tools and policies the AGBOM lists, then the provider services (credentials). */
const bomRows = (bom: Agbom) => {
  const cell = (value: unknown) => (typeof value === 'string' ? value : null);
  const parts = [
    ...bom.components.map((c) => [cell(c.type), cell(c.name), cell(c.version)]),
    ...(bom.services ?? []).map((s) => ['service', cell(s.name), cell(s.version)]),
  ];
  return table(['type', 'name', 'version'], parts, 'no components');
};

export function agentsCommand(state: RunState): Command {
  const agents = new Command('agents').description('agents and their bill of materials');

  agents
    .command('create')
    .description('register an agent (agents:write)')
    .requiredOption('--name <name>', 'the agent’s name')
    .option('--description <text>')
    .option('--owner <who>', 'who answers for the agent')
    .option('--allowed-models <models>', 'models it may invoke; comma-separated or repeated', words)
    .option('--tools <tools>', 'tools it uses, as name or name@version; comma-separated or repeated', words)
    .option('--credential-refs <refs>', 'credentials it may use, the first the default', words)
    .option('--metadata <json>', 'a JSON object kept with the agent', jsonObject)
    .action(
      action<CreateOptions>(state, async (call) => {
        const { name, description, owner, allowedModels, tools, credentialRefs, metadata } = call.options;
        const agent = await call.client().agents.create({
          name,
          description,
          owner,
          allowed_models: allowedModels,
          tools: tools?.map(tool),
          credential_refs: credentialRefs,
          metadata,
        });
        return call.show(agent, () => agentRecord(agent));
      }),
    );

  agents
    .command('agbom')
    .description('the agent’s CycloneDX 1.6 bill of materials (use --json to save the document)')
    .argument('<id>', 'the agent’s id')
    .action(
      action(state, async (call) => {
        const bom = await call.client().agents.agbom(call.args[0]!);
        return call.show(bom, () => `${bom.serialNumber}\n${bomRows(bom)}`);
      }),
    );

  return agents;
}
