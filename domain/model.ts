import type { Role, Scope } from './scopes';

export interface Org {
  id: string;
  name: string;
  createdAt: Date;
}

export interface User {
  id: string;
  orgId: string;
  email: string;
  name: string | null;
  role: Role;
  passwordHash: string;
  createdAt: Date;
}

export interface ApiKey {
  id: string;
  orgId: string;
  name: string;
  prefix: string;
  secretHash: string;
  scopes: Scope[];
  createdAt: Date;
  expiresAt: Date;
  lastUsedAt: Date | null;
  /** When the key stops (or stopped) working; in the future during a rotation's grace. */
  revokedAt: Date | null;
  createdBy: string | null;
  replacedBy: string | null;
  /**
   * The one who minted it holds it: the key an org's signup returns to the person signing up. Such
   * a key is that person's own identity when approvals are voted on (voter-lineage.ts).
   */
  heldByCreator: boolean;
}

/** A human's dashboard session (`css_` token). */
export interface UserSession {
  id: string;
  orgId: string;
  userId: string;
  tokenHash: string;
  createdAt: Date;
  expiresAt: Date;
  revokedAt: Date | null;
}

export interface Invite {
  id: string;
  orgId: string;
  email: string;
  role: Role;
  tokenHash: string;
  createdBy: string;
  createdAt: Date;
  expiresAt: Date;
  acceptedAt: Date | null;
}

export interface PageRequest {
  limit: number;
  /** The id of the last item of the previous page. */
  after: string | null;
}

export interface Page<T> {
  items: T[];
  nextAfter: string | null;
}

/** A stored provider secret, addressed by its `credential_ref`. */
export interface Credential {
  ref: string;
  orgId: string;
  name: string;
  provider: string;
  baseUrl: string | null;
  /** AES-256-GCM under the master key `keyId`; null once deleted (crypto-shredded). */
  sealedSecret: string | null;
  keyId: string;
  /** The associated data it was sealed with: 1 = org and ref only, resealed to 2 at start-up. */
  aadVersion: number;
  secretHint: string;
  version: number;
  createdAt: Date;
  createdBy: string;
  rotatedAt: Date | null;
  /** A deleted credential stays as a tombstone so history can still name it. */
  deletedAt: Date | null;
}

export interface AgentTool {
  name: string;
  version?: string;
  description?: string;
}

export type AgentStatus = 'active' | 'suspended';

export interface Agent {
  id: string;
  orgId: string;
  name: string;
  description: string | null;
  owner: string | null;
  allowedModels: string[];
  tools: AgentTool[];
  credentialRefs: string[];
  metadata: Record<string, unknown>;
  status: AgentStatus;
  version: number;
  createdAt: Date;
  updatedAt: Date;
  createdBy: string;
}

/** An org's own price for a model, overriding the built-in table. Micro-dollars per million tokens. */
export interface ModelPrice {
  orgId: string;
  model: string;
  inputMicrosPerMtok: number;
  outputMicrosPerMtok: number;
  updatedAt: Date;
  updatedBy: string;
}

/** The last AGBOM content an agent had: its serial and version change only when the content does. */
export interface AgbomState {
  agentId: string;
  orgId: string;
  contentHash: string;
  bomVersion: number;
  changedAt: Date;
}
