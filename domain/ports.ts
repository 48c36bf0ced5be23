import type { AuditEvent } from './audit/audit-event';
import type {
  AgbomState,
  Agent,
  ApiKey,
  Credential,
  Invite,
  ModelPrice,
  Org,
  Page,
  PageRequest,
  User,
  UserSession,
} from './model';
import type { PolicyMode } from './policy/policy';
import type { PolicyRepository } from './policy/policy-store.port';

export interface OrgRepository {
  add(org: Org): void;
  get(id: string): Promise<Org | null>;
}

export interface UserRepository {
  add(user: User): void;
  findByEmail(email: string): Promise<User | null>;
  get(orgId: string, id: string): Promise<User | null>;
  /** Swaps the password hash only if it is still `from`: false when it changed meanwhile. */
  replacePasswordHash(orgId: string, id: string, from: string, to: string): Promise<boolean>;
}

export interface KeyRepository {
  add(key: ApiKey): void;
  get(orgId: string, id: string): Promise<ApiKey | null>;
  /** The same, with the row locked until the transaction ends (concurrent rotations queue up). */
  getForUpdate(orgId: string, id: string): Promise<ApiKey | null>;
  list(orgId: string, page: PageRequest): Promise<Page<ApiKey>>;
  /** Writes changed fields of a key loaded in this transaction. */
  update(key: ApiKey): void;
}

export interface UserSessionRepository {
  add(session: UserSession): void;
  get(orgId: string, id: string): Promise<UserSession | null>;
  update(session: UserSession): void;
}

export interface InviteRepository {
  add(invite: Invite): void;
  findByTokenHash(tokenHash: string): Promise<Invite | null>;
  update(invite: Invite): void;
}

export interface CredentialRepository {
  add(credential: Credential): void;
  /** A live credential; deleted ones are not found. */
  get(orgId: string, ref: string): Promise<Credential | null>;
  /** The same, with the row locked until the transaction ends (rotate and delete queue up). */
  getForUpdate(orgId: string, ref: string): Promise<Credential | null>;
  /** Live and deleted credentials with these refs, for validation and history. */
  findByRefs(orgId: string, refs: string[]): Promise<Credential[]>;
  list(orgId: string, page: PageRequest): Promise<Page<Credential>>;
  /** Live credentials sealed under another master key, locked for resealing, across all orgs. */
  sealedUnderOtherKeys(keyId: string, limit: number): Promise<Credential[]>;
  /**
   * Live credentials sealed with associated data older than `aadVersion`, by ref after `afterRef`,
   * across all orgs; locked, waiting for whoever holds them (so no caller sees one mid-reseal).
   */
  sealedWithOlderAad(aadVersion: number, afterRef: string, limit: number): Promise<Credential[]>;
  /** Whether any live credential has associated data older than `aadVersion` (no lock: a probe). */
  anySealedWithOlderAad(aadVersion: number): Promise<boolean>;
  update(credential: Credential): void;
}

export interface AgentRepository {
  add(agent: Agent): void;
  get(orgId: string, id: string): Promise<Agent | null>;
  /** Loads and locks the row until the transaction ends, so concurrent changes queue up. */
  getForUpdate(orgId: string, id: string): Promise<Agent | null>;
  list(orgId: string, page: PageRequest): Promise<Page<Agent>>;
  update(agent: Agent): void;
}

export interface PriceRepository {
  list(orgId: string): Promise<ModelPrice[]>;
  get(orgId: string, model: string): Promise<ModelPrice | null>;
  put(price: ModelPrice): Promise<void>;
  /** How many prices the org has of its own, its row locked until the transaction ends (adds queue). */
  countLocked(orgId: string): Promise<number>;
  /** False when the org had no price of its own for the model. */
  delete(orgId: string, model: string): Promise<boolean>;
}

export interface AgbomStateRepository {
  /** Stores the content hash; the BOM version goes up only when the hash differs from the last. */
  record(orgId: string, agentId: string, contentHash: string, at: Date): Promise<AgbomState>;
}

export interface PolicyRef {
  id: string;
  name: string;
  version: number;
  /** A shadow policy is evaluated and recorded but never changes a verdict. */
  mode?: PolicyMode;
}

/** A model an agent's calls reached a provider with (how often and when is /v1/stats/usage's). */
export interface ModelUse {
  model: string;
  provider: string;
}

/** What an agent is governed by and has done: the parts of its AGBOM other resources own. */
export interface AgentActivityReader {
  policiesFor(agent: Agent): Promise<PolicyRef[]>;
  modelsUsedBy(orgId: string, agentId: string): Promise<ModelUse[]>;
}

/** Records an audit event in the current transaction; the sealer chains it later. */
export interface AuditRecorder {
  record(event: AuditEvent): void;
}

export interface Tx {
  orgs: OrgRepository;
  users: UserRepository;
  keys: KeyRepository;
  userSessions: UserSessionRepository;
  invites: InviteRepository;
  credentials: CredentialRepository;
  agents: AgentRepository;
  prices: PriceRepository;
  agbomStates: AgbomStateRepository;
  policies: PolicyRepository;
  activity: AgentActivityReader;
  audit: AuditRecorder;
}

/** Runs a function in one database transaction: all of its writes land, or none. */
export interface UnitOfWork {
  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  /** Reads outside a transaction (no BEGIN/COMMIT round trips). */
  read<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
}

/** Forgets cached authentication for a token, so revocation is felt at once. */
export interface AuthCache {
  forget(tokenHash: string): Promise<void>;
}

export interface SealedSecret {
  keyId: string;
  sealed: string;
}

/**
 * Encrypts provider secrets under the master key. `context` (org and ref) is bound to the
 * ciphertext, so a sealed secret copied onto another row does not open.
 */
export interface SecretSealer {
  /** The key new seals use; rows under another key are resealed by `master-key:reseal`. */
  readonly currentKeyId: string;
  seal(plaintext: string, context: string): SealedSecret;
  open(value: SealedSecret, context: string): string;
}
