import type { AuditEntry } from '../domain/audit/audit-event';
import type { VerifyResult } from '../domain/audit/hash-chain';
import type { Agent, ApiKey, Credential, Org, User } from '../domain/model';
import { microsToUsd, type Price } from '../domain/pricing/cost';

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export const presentKey = (key: ApiKey, lastUsed?: Date) => ({
  id: key.id,
  name: key.name,
  prefix: key.prefix,
  scopes: key.scopes,
  created_at: key.createdAt.toISOString(),
  expires_at: key.expiresAt.toISOString(),
  last_used_at: iso(lastUsed && (!key.lastUsedAt || lastUsed > key.lastUsedAt) ? lastUsed : key.lastUsedAt),
  revoked_at: iso(key.revokedAt),
});

export const presentOrg = (org: Org) => ({
  id: org.id,
  name: org.name,
  created_at: org.createdAt.toISOString(),
});

export const presentUser = (user: User) => ({
  id: user.id,
  email: user.email,
  name: user.name,
  role: user.role,
});

export const presentAuditEntry = (e: AuditEntry) => ({
  id: e.id,
  seq: e.seq,
  at: e.at.toISOString(),
  actor: e.actor,
  action: e.action,
  resource: e.resource,
  outcome: e.outcome,
  details: e.details,
  request_id: e.requestId,
  prev_hash: e.prevHash,
  hash: e.hash,
});

export const presentVerification = (r: VerifyResult) => ({
  valid: r.valid,
  entries_checked: r.entriesChecked,
  head: r.head,
  first_broken_seq: r.firstBrokenSeq,
});

export const presentCredential = (c: Credential) => ({
  credential_ref: c.ref,
  name: c.name,
  provider: c.provider,
  base_url: c.baseUrl,
  secret_hint: c.secretHint,
  version: c.version,
  created_at: c.createdAt.toISOString(),
  rotated_at: iso(c.rotatedAt),
});

export const presentAgent = (a: Agent) => ({
  id: a.id,
  name: a.name,
  description: a.description,
  owner: a.owner,
  allowed_models: a.allowedModels,
  tools: a.tools,
  credential_refs: a.credentialRefs,
  metadata: a.metadata,
  status: a.status,
  version: a.version,
  created_at: a.createdAt.toISOString(),
  updated_at: a.updatedAt.toISOString(),
});

export const presentPrice = (p: Price) => ({
  model: p.model,
  input_per_mtok_usd: microsToUsd(p.inputMicrosPerMtok),
  output_per_mtok_usd: microsToUsd(p.outputMicrosPerMtok),
  source: p.source,
});
