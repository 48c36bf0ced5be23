import { agbomContentHash, buildAgbom, serialFromHash, type AgbomInput } from '../../domain/agents/agbom';
import type { ModelUse, PolicyRef } from '../../domain/ports';
import { validateCycloneDx16 } from '../support/cyclonedx-validator';

const at = new Date('2026-11-01T10:00:00Z');
const full = (): AgbomInput => ({
  orgId: 'org_1',
  agent: {
    id: 'agt_1',
    name: 'release-bot',
    description: 'writes notes',
    owner: 'platform',
    version: 3,
    status: 'active',
    allowedModels: ['gpt-4o', 'claude-haiku-4-5'],
    tools: [{ name: 'git', version: '2.39', description: 'reads history' }, { name: 'web search' }],
    metadata: { team: 'platform', tier: 1 },
    createdAt: at,
  },
  credentials: [
    { ref: 'cred_b', name: 'anthropic', provider: 'anthropic', baseUrl: null, deleted: false },
    {
      ref: 'cred_a',
      name: 'vllm',
      provider: 'openai_compatible',
      baseUrl: 'https://llm.example.com/v1',
      deleted: false,
    },
  ],
  policies: [{ id: 'pol_1', name: 'no-pii', version: 2 }],
  modelsUsed: [
    { model: 'gpt-4o', provider: 'openai' },
    { model: 'o3', provider: 'openai' },
  ],
});
const state = { bomVersion: 4, changedAt: at };
type Doc = { components: { name: string; type: string; properties: { name: string; value: string }[] }[] };

describe('AGBOM builder', () => {
  it('builds valid CycloneDX 1.6 for a full agent and for a bare one', () => {
    expect(validateCycloneDx16(buildAgbom(full(), state))).toEqual([]);
    const bare = full();
    Object.assign(bare.agent, { allowedModels: [], tools: [], description: null, owner: null, metadata: {} });
    Object.assign(bare, { credentials: [], policies: [], modelsUsed: [] });
    expect(validateCycloneDx16(buildAgbom(bare, state))).toEqual([]);
  });

  it('is checked by a validator that can fail', () => {
    const doc = buildAgbom(full(), state) as Record<string, unknown> & Doc;
    expect(validateCycloneDx16({ ...doc, bomFormat: 'SPDX' })).not.toEqual([]);
    const badType = { ...doc, components: [{ ...doc.components[0], type: 'robot' }] };
    expect(validateCycloneDx16(badType)).not.toEqual([]);
    expect(validateCycloneDx16({ ...doc, serialNumber: 'not-a-urn' })).not.toEqual([]);
  });

  it('lists a model used but never allowed, marked so, with the provider it was used through', () => {
    const doc = buildAgbom(full(), state) as unknown as Doc;
    const o3 = doc.components.find((c) => c.name === 'o3');
    expect(o3?.type).toBe('machine-learning-model');
    expect(o3?.properties).toEqual(
      expect.arrayContaining([
        { name: 'cp:model:allowed', value: 'false' },
        { name: 'cp:model:used', value: 'true' },
        { name: 'cp:model:used_via', value: 'openai' },
      ]),
    );
    expect(doc.components.find((c) => c.type === 'data')?.name).toBe('no-pii');
  });

  it('lists each policy with its id, version and mode', () => {
    const input = full();
    input.policies = [{ id: 'pol_1', name: 'no-pii', version: 2, mode: 'shadow' }];
    const doc = buildAgbom(input, state) as unknown as Doc & { components: { version?: string }[] };
    const policy = doc.components.find((c) => c.type === 'data');
    expect(policy).toMatchObject({ name: 'no-pii', version: '2' });
    expect(policy?.properties).toEqual(
      expect.arrayContaining([
        { name: 'cp:policy:id', value: 'pol_1' },
        { name: 'cp:policy:mode', value: 'shadow' },
      ]),
    );
    expect(validateCycloneDx16(buildAgbom(input, state))).toEqual([]);
  });

  it('hashes the same content the same way, whatever the order of its lists', () => {
    const a = full();
    const b = full();
    b.agent.allowedModels.reverse();
    b.agent.tools.reverse();
    b.credentials.reverse();
    b.modelsUsed.reverse();
    b.agent.metadata = { tier: 1, team: 'platform' };
    expect(agbomContentHash(b)).toBe(agbomContentHash(a));
    expect(buildAgbom(b, state)).toEqual(buildAgbom(a, state));
  });

  it.each<[string, (i: AgbomInput) => void]>([
    ['an allowed model', (i) => i.agent.allowedModels.push('o4-mini')],
    ['a tool version', (i) => ((i.agent.tools[0] as { version?: string }).version = '2.40')],
    ['a credential deleted', (i) => ((i.credentials[0] as { deleted: boolean }).deleted = true)],
    ['a policy version', (i) => ((i.policies[0] as { version: number }).version = 3)],
    ['a policy mode', (i) => ((i.policies[0] as PolicyRef).mode = 'shadow')],
    ['the list of policies', (i) => i.policies.push({ id: 'pol_2', name: 'no-shell', version: 1 })],
    [
      'a provider a model was used through',
      (i) => i.modelsUsed.push({ ...(i.modelsUsed[0] as ModelUse), provider: 'azure' }),
    ],
    ['the agent name', (i) => (i.agent.name = 'renamed')],
    ['the agent version', (i) => (i.agent.version = 4)],
    ['the agent status', (i) => (i.agent.status = 'suspended')],
  ])('changes its hash and serial when %s changes', (_label, change) => {
    const before = full();
    const after = full();
    change(after);
    expect(agbomContentHash(after)).not.toBe(agbomContentHash(before));
  });

  it('makes serials that match the schema pattern and differ per hash', () => {
    const pattern = /^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
    const a = serialFromHash('a'.repeat(64));
    expect(a).toMatch(pattern);
    expect(a).not.toBe(serialFromHash('b'.repeat(64)));
    expect(serialFromHash(agbomContentHash(full()))).toBe(serialFromHash(agbomContentHash(full())));
  });

  it('carries no secret material: credentials appear by ref, name, provider and endpoint only', () => {
    const text = JSON.stringify(buildAgbom(full(), state));
    expect(text).not.toMatch(/secret|sealed|hint/i);
    expect(text).toContain('cred_a');
  });
});
