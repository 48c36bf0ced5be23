import type { StrandedScope } from '../approvals/approval-store';
import type { Actor } from '../audit/audit-event';
import { newAuditEvent } from '../audit/new-event';
import type { Clock } from '../clock';
import { invalidField, notFound } from '../errors';
import { newId } from '../ids';
import type { Credential, Page, PageRequest } from '../model';
import type { SecretSealer, Tx, UnitOfWork } from '../ports';
import { actorOf, type CallContext } from '../principal';
import type { Provider } from '../providers';
import { baseUrlProblem, canonicalUrl } from './provider-host';

export interface CredentialDeps {
  uow: UnitOfWork;
  clock: Clock;
  sealer: SecretSealer;
  allowPrivateProviderHosts: boolean;
  /** Withdraws the approvals of invocations that would run with a deleted credential (`withdrawStranded`). */
  withdrawApprovals(scope: StrandedScope, by: Actor, requestId: string | null): Promise<void>;
}

export interface StoreCredentialInput {
  name: string;
  provider: Provider;
  secret: string;
  baseUrl?: string | null | undefined;
}

/** What a sealed secret is bound to besides its org. */
export type SealedFor = Pick<Credential, 'ref' | 'provider' | 'baseUrl' | 'version'>;

/** The associated data new seals use: a credential's `aadVersion`. */
export const AAD_VERSION = 2;

/**
 * Associated data of a sealed secret: it opens only on its own org and ref, for the provider and
 * base_url it was stored for, at its version. Whoever can write the database but lacks the master
 * key cannot re-point a credential at their own host to be sent the secret. JSON, so no field can
 * run into the next.
 */
export const sealingContext = (orgId: string, c: SealedFor): string =>
  JSON.stringify(['credential', AAD_VERSION, orgId, c.ref, c.provider, c.baseUrl, c.version]);

/** What rows with `aadVersion` 1 were sealed with: org and ref only. Opened only to reseal them. */
export const legacySealingContext = (orgId: string, ref: string): string => `credential\n${orgId}\n${ref}`;

/**
 * The last 4 characters, enough to recognise a secret. A secret under 8 characters shows
 * nothing: its last 4 would be half of it or all of it.
 */
export const secretHint = (secret: string): string => (secret.length >= 8 ? `…${secret.slice(-4)}` : '…');

function checkBaseUrl(deps: CredentialDeps, provider: Provider, baseUrl: string | null): void {
  if (provider === 'openai_compatible' && !baseUrl)
    throw invalidField('base_url', 'base_url: required for provider openai_compatible');
  if (provider === 'mock' && baseUrl !== null)
    throw invalidField('base_url', 'base_url: the mock provider has none');
  // "" is no URL: stored, it made every call fail (QA); leave base_url out for the provider's own.
  const problem = baseUrl !== null ? baseUrlProblem(baseUrl, deps.allowPrivateProviderHosts) : null;
  if (problem) throw invalidField('base_url', `base_url: ${problem}`);
}

const recordEvent = (tx: Tx, ctx: CallContext, action: string, c: Credential, at: Date) =>
  tx.audit.record(
    newAuditEvent({
      orgId: c.orgId,
      actor: actorOf(ctx.principal),
      action,
      resource: { type: 'credential', id: c.ref },
      at,
      requestId: ctx.requestId,
      details: { name: c.name, provider: c.provider, base_url: c.baseUrl, version: c.version },
    }),
  );

export async function storeCredential(
  deps: CredentialDeps,
  ctx: CallContext,
  input: StoreCredentialInput,
): Promise<Credential> {
  checkBaseUrl(deps, input.provider, input.baseUrl ?? null);
  const baseUrl = input.baseUrl == null ? null : canonicalUrl(input.baseUrl);
  const now = deps.clock.now();
  const orgId = ctx.principal.orgId;
  const bound: SealedFor = { ref: newId('cred'), provider: input.provider, baseUrl, version: 1 };
  const sealed = deps.sealer.seal(input.secret, sealingContext(orgId, bound));
  const credential: Credential = {
    ...bound,
    orgId,
    name: input.name,
    sealedSecret: sealed.sealed,
    keyId: sealed.keyId,
    aadVersion: AAD_VERSION,
    secretHint: secretHint(input.secret),
    createdAt: now,
    createdBy: ctx.principal.id,
    rotatedAt: null,
    deletedAt: null,
  };
  await deps.uow.transaction(async (tx) => {
    tx.credentials.add(credential);
    recordEvent(tx, ctx, 'credential.stored', credential, now);
  });
  return credential;
}

async function loadCredential(tx: Tx, ctx: CallContext, ref: string, forUpdate = false): Promise<Credential> {
  const orgId = ctx.principal.orgId;
  const credential = forUpdate
    ? await tx.credentials.getForUpdate(orgId, ref)
    : await tx.credentials.get(orgId, ref);
  if (!credential) throw notFound('credential');
  return credential;
}

export const getCredential = (deps: CredentialDeps, ctx: CallContext, ref: string): Promise<Credential> =>
  deps.uow.read((tx) => loadCredential(tx, ctx, ref));

export const listCredentials = (
  deps: CredentialDeps,
  ctx: CallContext,
  page: PageRequest,
): Promise<Page<Credential>> => deps.uow.read((tx) => tx.credentials.list(ctx.principal.orgId, page));

/** A new secret under the same ref: agents keep naming it, the next call uses the new secret. */
export async function rotateCredential(
  deps: CredentialDeps,
  ctx: CallContext,
  ref: string,
  secret: string,
): Promise<Credential> {
  const now = deps.clock.now();
  return deps.uow.transaction(async (tx) => {
    const credential = await loadCredential(tx, ctx, ref, true);
    credential.version += 1;
    const sealed = deps.sealer.seal(secret, sealingContext(credential.orgId, credential));
    credential.sealedSecret = sealed.sealed;
    credential.keyId = sealed.keyId;
    credential.aadVersion = AAD_VERSION;
    credential.secretHint = secretHint(secret);
    credential.rotatedAt = now;
    tx.credentials.update(credential);
    recordEvent(tx, ctx, 'credential.rotated', credential, now);
    return credential;
  });
}

/**
 * The secret is destroyed at once (the ciphertext is dropped, not just hidden); the row stays
 * as a tombstone so audit entries, invocations and AGBOMs can still say what the ref was.
 * Invocations waiting on an approval to run with it never can: their approvals are withdrawn.
 */
export async function deleteCredential(deps: CredentialDeps, ctx: CallContext, ref: string): Promise<void> {
  const now = deps.clock.now();
  const orgId = await deps.uow.transaction(async (tx) => {
    const credential = await loadCredential(tx, ctx, ref, true);
    credential.sealedSecret = null;
    credential.deletedAt = now;
    tx.credentials.update(credential);
    recordEvent(tx, ctx, 'credential.deleted', credential, now);
    return credential.orgId;
  });
  await deps.withdrawApprovals({ orgId, credentialRef: ref }, actorOf(ctx.principal), ctx.requestId);
}

/**
 * Not an HTTP error: an invocation whose credential is gone fails with this code in its
 * `error` (the contract's `credential_not_found`), while the request that queued it succeeded.
 */
export class CredentialNotFound extends Error {
  readonly code = 'credential_not_found';
  constructor(ref: string) {
    super(`credential_not_found: no live credential ${ref}`);
    this.name = 'CredentialNotFound';
  }
}

export interface OpenedCredential {
  credential: Credential;
  secret: string;
}

/** A row sealed before provider and base_url were bound: it opens only to be resealed. */
export class LegacySealRefused extends Error {
  constructor(ref: string) {
    super(
      `credential ${ref} was sealed before its provider and base_url were bound and is refused until ` +
        'resealed: restart the service or run `npm run master-key:reseal`',
    );
    this.name = 'LegacySealRefused';
  }
}

/**
 * The decrypted secret, for one provider call. A missing or deleted credential is a
 * `credential_not_found` failure of the invocation, not an HTTP error.
 */
export async function openCredential(
  deps: Pick<CredentialDeps, 'uow' | 'sealer'>,
  orgId: string,
  ref: string,
): Promise<OpenedCredential> {
  const credential = await deps.uow.read((tx) => tx.credentials.get(orgId, ref));
  if (!credential?.sealedSecret) throw new CredentialNotFound(ref);
  if (credential.aadVersion < AAD_VERSION) throw new LegacySealRefused(ref);
  const secret = deps.sealer.open(
    { keyId: credential.keyId, sealed: credential.sealedSecret },
    sealingContext(orgId, credential),
  );
  return { credential, secret };
}
