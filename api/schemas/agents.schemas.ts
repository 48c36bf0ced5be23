import { z } from 'zod';
import { metadata, timestamp } from './common';

export const modelName = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$/, 'letters, digits and . _ : / @ + - only');

const unique = <T>(items: T[], key: (t: T) => string) => new Set(items.map(key)).size === items.length;

const Tool = z
  .object({
    name: z.string().trim().min(1).max(100),
    version: z.string().trim().min(1).max(50).optional(),
    description: z.string().max(2000).optional(),
  })
  .strict();

const fields = {
  name: z.string().trim().min(1).max(100),
  description: z.string().max(2000).nullable(),
  owner: z.string().trim().min(1).max(200).nullable().meta({ description: 'Who answers for the agent.' }),
  allowed_models: z
    .array(modelName)
    .max(100)
    .refine((m) => unique(m, (x) => x), 'must not repeat a model')
    .meta({ description: 'Models the agent may invoke; empty means no model is allowed.' }),
  tools: z
    .array(Tool)
    .max(100)
    .refine((t) => unique(t, (x) => x.name), 'must not repeat a tool name'),
  credential_refs: z
    .array(z.string().min(1).max(100))
    .max(20)
    .refine((r) => unique(r, (x) => x), 'must not repeat a ref')
    .meta({
      description:
        "Refs of live credentials of this org; the first is the default for invokes. The agent's invokes may " +
        'use only these (the guardian denies others with credential_not_allowed); empty means none.',
    }),
  metadata,
};

export const CreateAgentBody = z
  .object({
    name: fields.name,
    description: fields.description.optional(),
    owner: fields.owner.optional(),
    allowed_models: fields.allowed_models.optional(),
    tools: fields.tools.optional(),
    credential_refs: fields.credential_refs.optional(),
    metadata: fields.metadata.optional(),
  })
  .strict();

export const PatchAgentBody = CreateAgentBody.partial()
  .strict()
  .refine((b) => Object.keys(b).length > 0, 'give at least one field to change');

export const AgentView = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    owner: z.string().nullable(),
    allowed_models: z.array(z.string()),
    tools: z.array(
      z.object({ name: z.string(), version: z.string().optional(), description: z.string().optional() }),
    ),
    credential_refs: z.array(z.string()),
    metadata: z.record(z.string(), z.unknown()),
    status: z.enum(['active', 'suspended']),
    version: z.number().int(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: 'Agent' });

export const AgbomView = z
  .object({
    bomFormat: z.literal('CycloneDX'),
    specVersion: z.literal('1.6'),
    serialNumber: z.string(),
    version: z.number().int(),
    metadata: z.record(z.string(), z.unknown()),
    components: z.array(z.record(z.string(), z.unknown())),
    services: z.array(z.record(z.string(), z.unknown())).optional(),
    dependencies: z.array(z.record(z.string(), z.unknown())),
  })
  .loose()
  .meta({ id: 'Agbom', description: 'A CycloneDX 1.6 JSON bill of materials of one agent.' });
