import { newAuditEvent } from '../audit/new-event';
import type { Clock } from '../clock';
import { invalidField, notFound } from '../errors';
import { newId } from '../ids';
import type { Credential, Page, PageRequest } from '../model';
import type { SecretSealer, Tx, UnitOfWork } from '../ports';
import { actorOf, type CallContext } from '../principal';
import type { Provider } from '../providers';
import { baseUrlProblem } from './provider-host';

export interface CredentialDeps {
  uow: UnitOfWork;
  clock: Clock;
  sealer: SecretSealer;
  allowPrivateProviderHosts: boolean;
}

export interface StoreCredentialInput {
  name: string;
  provider: Provider;
  secret: string;
  baseUrl?: string | null | undefined;
}

/** Associated data of a sealed secret: the ciphertext opens only on its own org and ref. */
export const sealingContext = (orgId: string, ref: string): string => `credential\n${orgId}\n${ref}`;

/**
 * The last 4 characters, enough to recognise a secret. A secret under 8 characters shows
 * nothing: its last 4 would be half of it or all of it.
 */
export const secretHint = (secret: string): string => (secret.length >= 8 ? `…${secret.slice(-4)}` : '…');

function checkBaseUrl(deps: CredentialDeps, provider: Provider, baseUrl: string | null): void {
  if (provider === 'openai_compatible' && !baseUrl)
    throw invalidField('base_url', 'base_url: required for provider openai_compatible');
  if (provider === 'mock' && baseUrl) throw invalidField('base_url', 'base_url: the mock provider has none');
  const problem = baseUrl ? baseUrlProblem(baseUrl, deps.allowPrivateProviderHosts) : null;
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
  const baseUrl = input.baseUrl ?? null;
  checkBaseUrl(deps, input.provider, baseUrl);
  const now = deps.clock.now();
  const orgId = ctx.principal.orgId;
  const ref = newId('cred');
  const sealed = deps.sealer.seal(input.secret, sealingContext(orgId, ref));
  const credential: Credential = {
    ref,
    orgId,
    name: input.name,
    provider: input.provider,
    baseUrl,
    sealedSecret: sealed.sealed,
    keyId: sealed.keyId,
    secretHint: secretHint(input.secret),
    version: 1,
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
    const sealed = deps.sealer.seal(secret, sealingContext(credential.orgId, credential.ref));
    credential.sealedSecret = sealed.sealed;
    credential.keyId = sealed.keyId;
    credential.secretHint = secretHint(secret);
    credential.version += 1;
    credential.rotatedAt = now;
    tx.credentials.update(credential);
    recordEvent(tx, ctx, 'credential.rotated', credential, now);
    return credential;
  });
}

/**
 * The secret is destroyed at once (the ciphertext is dropped, not just hidden); the row stays
 * as a tombstone so audit entries, invocations and AGBOMs can still say what the ref was.
 */
export async function deleteCredential(deps: CredentialDeps, ctx: CallContext, ref: string): Promise<void> {
  const now = deps.clock.now();
  await deps.uow.transaction(async (tx) => {
    const credential = await loadCredential(tx, ctx, ref, true);
    credential.sealedSecret = null;
    credential.deletedAt = now;
    tx.credentials.update(credential);
    recordEvent(tx, ctx, 'credential.deleted', credential, now);
  });
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
  const secret = deps.sealer.open(
    { keyId: credential.keyId, sealed: credential.sealedSecret },
    sealingContext(orgId, ref),
  );
  return { credential, secret };
}
