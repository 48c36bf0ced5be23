import { createHash } from 'node:crypto';
import { canonicalJson } from '../canonical-json';
import type { Agent } from '../model';
import type { ModelUse, PolicyRef } from '../ports';

/** What an agent's bill of materials is made of. */
export interface AgbomInput {
  agent: Pick<
    Agent,
    | 'id'
    | 'name'
    | 'description'
    | 'owner'
    | 'version'
    | 'status'
    | 'allowedModels'
    | 'tools'
    | 'metadata'
    | 'createdAt'
  >;
  orgId: string;
  /** One per credential ref of the agent; name and provider are null when the ref is gone. */
  credentials: {
    ref: string;
    name: string | null;
    provider: string | null;
    baseUrl: string | null;
    deleted: boolean;
  }[];
  policies: PolicyRef[];
  modelsUsed: ModelUse[];
}

export interface AgbomState {
  bomVersion: number;
  changedAt: Date;
}

type Property = { name: string; value: string };
type Json = Record<string, unknown>;

const GENERATOR = { type: 'application', name: 'control-plane', description: 'Governed LLM control plane' };

/** bom-refs must be unique in the document: a kind prefix plus the encoded name cannot collide. */
const ref = (kind: string, name: string) => `${kind}:${encodeURIComponent(name)}`;
const prop = (name: string, value: unknown): Property => ({ name, value: String(value) });
const byName = <T extends { name: string }>(a: T, b: T) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

function rootComponent(input: AgbomInput): Json {
  const { agent } = input;
  const metadata = Object.keys(agent.metadata)
    .sort()
    .map((k) => prop(`cp:agent:metadata:${k}`, JSON.stringify(agent.metadata[k])));
  return {
    type: 'application',
    'bom-ref': ref('agent', agent.id),
    name: agent.name,
    version: String(agent.version),
    ...(agent.description ? { description: agent.description } : {}),
    properties: [
      prop('cp:agent:id', agent.id),
      prop('cp:agent:org_id', input.orgId),
      prop('cp:agent:status', agent.status),
      ...(agent.owner ? [prop('cp:agent:owner', agent.owner)] : []),
      prop('cp:agent:created_at', agent.createdAt.toISOString()),
      ...metadata,
    ],
  };
}

/**
 * Allowed and used models merge into one component each: a used model nobody allowed shows up too.
 * A use is named by its provider only: how often and when it was last used change with every
 * call, and would give every invoke a new serial and version (/v1/stats/usage counts the calls).
 */
function modelComponents(input: AgbomInput): Json[] {
  const names = new Set([...input.agent.allowedModels, ...input.modelsUsed.map((m) => m.model)]);
  const allowed = new Set(input.agent.allowedModels);
  return [...names].sort().map((name) => {
    const uses = input.modelsUsed
      .filter((m) => m.model === name)
      .sort((a, b) => (a.provider < b.provider ? -1 : 1))
      .map((m) => prop('cp:model:used_via', m.provider));
    return {
      type: 'machine-learning-model',
      'bom-ref': ref('model', name),
      name,
      properties: [
        prop('cp:model:allowed', allowed.has(name)),
        prop('cp:model:used', uses.length > 0),
        ...uses,
      ],
    };
  });
}

/**
 * Tools are `application` components: each is software the agent runs or calls, with its own
 * name and version, which is what an inventory of an agent's capabilities needs to list.
 */
const toolComponents = (input: AgbomInput): Json[] =>
  [...input.agent.tools].sort(byName).map((t) => ({
    type: 'application',
    'bom-ref': ref('tool', t.name),
    name: t.name,
    ...(t.version ? { version: t.version } : {}),
    ...(t.description ? { description: t.description } : {}),
    properties: [prop('cp:kind', 'tool')],
  }));

/**
 * Policies are `data` components of kind configuration: they are the configuration that governs
 * the agent, versioned, and a reviewer wants them listed beside what they govern. A shadow
 * policy is listed with its mode: it is evaluated but changes no verdict.
 */
const policyComponents = (input: AgbomInput): Json[] =>
  [...input.policies].sort(byName).map((p) => ({
    type: 'data',
    'bom-ref': ref('policy', p.id),
    name: p.name,
    version: String(p.version),
    data: [{ type: 'configuration', name: p.name }],
    properties: [
      prop('cp:kind', 'policy'),
      prop('cp:policy:id', p.id),
      ...(p.mode ? [prop('cp:policy:mode', p.mode)] : []),
    ],
  }));

/** Credentials are the provider services the agent may call through this control plane; never secrets. */
const credentialServices = (input: AgbomInput): Json[] =>
  [...input.credentials]
    .sort((a, b) => (a.ref < b.ref ? -1 : 1))
    .map((c) => ({
      'bom-ref': ref('credential', c.ref),
      name: c.name ?? c.ref,
      ...(c.provider ? { provider: { name: c.provider } } : {}),
      ...(c.baseUrl ? { endpoints: [c.baseUrl] } : {}),
      authenticated: true,
      'x-trust-boundary': true,
      properties: [
        prop('cp:credential:ref', c.ref),
        prop('cp:credential:provider', c.provider ?? 'unknown'),
        prop('cp:credential:deleted', c.deleted),
      ],
    }));

/**
 * The document without the parts that name a particular revision (serial, version, timestamp):
 * deterministic, so its hash changes exactly when the bill of materials does.
 */
export function agbomContent(input: AgbomInput): Json {
  const root = rootComponent(input);
  const components = [...modelComponents(input), ...toolComponents(input), ...policyComponents(input)];
  const services = credentialServices(input);
  const children = [...components, ...services].map((c) => c['bom-ref'] as string);
  return {
    bomFormat: 'CycloneDX',
    specVersion: '1.6',
    metadata: {
      tools: { components: [GENERATOR] },
      component: root,
    },
    components,
    services,
    // CycloneDX asks for every component and service in the graph, with empty lists for leaves.
    dependencies: [
      { ref: root['bom-ref'], dependsOn: children },
      ...children.map((child) => ({ ref: child, dependsOn: [] })),
    ],
  };
}

export const agbomContentHash = (input: AgbomInput): string =>
  createHash('sha256')
    .update(canonicalJson(agbomContent(input)))
    .digest('hex');

/** An RFC 9562 version-8 (custom) UUID made of the content hash: same content, same serial. */
export function serialFromHash(hash: string): string {
  const h = hash.slice(0, 32).split('');
  h[12] = '8';
  h[16] = ((parseInt(h[16] ?? '0', 16) & 0x3) | 0x8).toString(16);
  const x = h.join('');
  return `urn:uuid:${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
}

export function buildAgbom(input: AgbomInput, state: AgbomState): Json {
  const content = agbomContent(input);
  const hash = agbomContentHash(input);
  const metadata = content.metadata as Json;
  return {
    bomFormat: content.bomFormat,
    specVersion: content.specVersion,
    serialNumber: serialFromHash(hash),
    version: state.bomVersion,
    metadata: {
      timestamp: state.changedAt.toISOString(),
      ...metadata,
      properties: [prop('cp:agbom:content_hash', hash)],
    },
    components: content.components,
    services: content.services,
    dependencies: content.dependencies,
  };
}
