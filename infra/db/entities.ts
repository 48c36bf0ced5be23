import { ArrayType, BigIntType, EntitySchema } from '@mikro-orm/core';
import type {
  AgbomState,
  Agent,
  ApiKey,
  Credential,
  Invite,
  ModelPrice,
  Org,
  User,
  UserSession,
} from '../../domain/model';

/** A pending audit event: written in the change's transaction, moved to audit_entries when sealed. */
export interface AuditOutboxRow {
  pos?: string;
  id: string;
  orgId: string;
  at: Date;
  actorType: string;
  actorId: string;
  action: string;
  resourceType: string;
  resourceId: string;
  outcome: string;
  details: Record<string, unknown>;
  requestId: string | null;
}

const id = { type: 'string', primary: true } as const;
const text = { type: 'string' } as const;
const nullableText = { type: 'string', nullable: true } as const;
const time = { type: 'Date' } as const;
const nullableTime = { type: 'Date', nullable: true } as const;

export const OrgSchema = new EntitySchema<Org>({
  name: 'Org',
  tableName: 'orgs',
  properties: { id, name: text, createdAt: time },
});

export const UserSchema = new EntitySchema<User>({
  name: 'User',
  tableName: 'users',
  properties: {
    id,
    orgId: text,
    email: text,
    name: nullableText,
    role: text,
    passwordHash: { ...text, lazy: false },
    createdAt: time,
  },
});

export const ApiKeySchema = new EntitySchema<ApiKey>({
  name: 'ApiKey',
  tableName: 'api_keys',
  properties: {
    id,
    orgId: text,
    name: text,
    prefix: text,
    secretHash: text,
    scopes: { type: ArrayType },
    createdAt: time,
    expiresAt: time,
    lastUsedAt: nullableTime,
    revokedAt: nullableTime,
    createdBy: nullableText,
    replacedBy: nullableText,
    heldByCreator: { type: 'boolean', default: false },
  },
});

export const UserSessionSchema = new EntitySchema<UserSession>({
  name: 'UserSession',
  tableName: 'user_sessions',
  properties: {
    id,
    orgId: text,
    userId: text,
    tokenHash: text,
    createdAt: time,
    expiresAt: time,
    revokedAt: nullableTime,
  },
});

export const InviteSchema = new EntitySchema<Invite>({
  name: 'Invite',
  tableName: 'invites',
  properties: {
    id,
    orgId: text,
    email: text,
    role: text,
    tokenHash: text,
    createdBy: text,
    createdAt: time,
    expiresAt: time,
    acceptedAt: nullableTime,
  },
});

export const AuditOutboxSchema = new EntitySchema<AuditOutboxRow>({
  name: 'AuditOutbox',
  tableName: 'audit_outbox',
  properties: {
    pos: { type: 'bigint', primary: true, autoincrement: true },
    id: text,
    orgId: text,
    at: time,
    actorType: text,
    actorId: text,
    action: text,
    resourceType: text,
    resourceId: text,
    outcome: text,
    details: { type: 'json' },
    requestId: nullableText,
  },
});

export const CredentialSchema = new EntitySchema<Credential>({
  name: 'Credential',
  tableName: 'credentials',
  properties: {
    ref: id,
    orgId: text,
    name: text,
    provider: text,
    baseUrl: nullableText,
    sealedSecret: nullableText,
    keyId: text,
    aadVersion: { type: 'smallint' },
    secretHint: text,
    version: { type: 'integer' },
    createdAt: time,
    createdBy: text,
    rotatedAt: nullableTime,
    deletedAt: nullableTime,
  },
});

export const AgentSchema = new EntitySchema<Agent>({
  name: 'Agent',
  tableName: 'agents',
  properties: {
    id,
    orgId: text,
    name: text,
    description: nullableText,
    owner: nullableText,
    allowedModels: { type: ArrayType },
    tools: { type: 'json' },
    credentialRefs: { type: ArrayType },
    metadata: { type: 'json' },
    status: text,
    version: { type: 'integer' },
    createdAt: time,
    updatedAt: time,
    createdBy: text,
  },
});

export const AgbomStateSchema = new EntitySchema<AgbomState>({
  name: 'AgbomState',
  tableName: 'agbom_states',
  properties: {
    agentId: id,
    orgId: text,
    contentHash: text,
    bomVersion: { type: 'integer' },
    changedAt: time,
  },
});

const micros = { type: new BigIntType('number') } as const;

export const ModelPriceSchema = new EntitySchema<ModelPrice>({
  name: 'ModelPrice',
  tableName: 'model_prices',
  properties: {
    orgId: { type: 'string', primary: true },
    model: { type: 'string', primary: true },
    inputMicrosPerMtok: micros,
    outputMicrosPerMtok: micros,
    updatedAt: time,
    updatedBy: text,
  },
});

export const ENTITIES = [
  CredentialSchema,
  AgentSchema,
  AgbomStateSchema,
  ModelPriceSchema,
  OrgSchema,
  UserSchema,
  ApiKeySchema,
  UserSessionSchema,
  InviteSchema,
  AuditOutboxSchema,
];
