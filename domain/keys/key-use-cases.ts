import type { StrandedScope } from '../approvals/approval-store';
import type { Actor } from '../audit/audit-event';
import { newAuditEvent } from '../audit/new-event';
import type { Clock } from '../clock';
import { addSeconds } from '../clock';
import { invalidState, notFound } from '../errors';
import type { ApiKey, Page, PageRequest } from '../model';
import type { AuthCache, Tx, UnitOfWork } from '../ports';
import { actorOf, type CallContext } from '../principal';
import { expandScopes } from '../scopes';
import { buildKey, expiryFromDays, isRevoked, KEY_LIFETIME_DAYS, type MintedKey } from './build-key';

export interface KeyDeps {
  uow: UnitOfWork;
  clock: Clock;
  authCache: AuthCache;
  /** Withdraws the approvals a revoked key's invocations wait on (`withdrawStranded`). */
  withdrawApprovals(scope: StrandedScope, by: Actor, requestId: string | null): Promise<void>;
}

export interface MintKeyInput {
  name: string;
  scopes: string[];
  expiresInDays?: number;
}

const recordKeyEvent = (tx: Tx, ctx: CallContext, action: string, key: ApiKey, at: Date, details = {}) =>
  tx.audit.record(
    newAuditEvent({
      orgId: key.orgId,
      actor: actorOf(ctx.principal),
      action,
      resource: { type: 'api_key', id: key.id },
      at,
      requestId: ctx.requestId,
      details: { name: key.name, prefix: key.prefix, scopes: key.scopes, ...details },
    }),
  );

export async function mintKey(deps: KeyDeps, ctx: CallContext, input: MintKeyInput): Promise<MintedKey> {
  const scopes = expandScopes(input.scopes);
  const now = deps.clock.now();
  const minted = buildKey({
    orgId: ctx.principal.orgId,
    name: input.name,
    scopes,
    expiresAt: expiryFromDays(now, input.expiresInDays ?? KEY_LIFETIME_DAYS.default),
    createdBy: ctx.principal.id,
    now,
  });
  await deps.uow.transaction(async (tx) => {
    tx.keys.add(minted.key);
    recordKeyEvent(tx, ctx, 'key.created', minted.key, now, {
      expires_at: minted.key.expiresAt.toISOString(),
    });
  });
  return minted;
}

/** `forUpdate`: lock the row until the transaction ends, so that changes to one key queue up. */
async function loadKey(tx: Tx, ctx: CallContext, id: string, forUpdate = false): Promise<ApiKey> {
  const key = await (forUpdate ? tx.keys.getForUpdate : tx.keys.get)(ctx.principal.orgId, id);
  if (!key) throw notFound('key');
  return key;
}

export const getKey = (deps: KeyDeps, ctx: CallContext, id: string): Promise<ApiKey> =>
  deps.uow.read((tx) => loadKey(tx, ctx, id));

export const listKeys = (deps: KeyDeps, ctx: CallContext, page: PageRequest): Promise<Page<ApiKey>> =>
  deps.uow.read((tx) => tx.keys.list(ctx.principal.orgId, page));

/**
 * A new key with the same name and scopes and a fresh secret and lifetime; the old key stops
 * at once, or after `graceSeconds` so that deployments can switch over.
 */
export async function rotateKey(
  deps: KeyDeps,
  ctx: CallContext,
  id: string,
  graceSeconds = 0,
): Promise<MintedKey> {
  const result = await deps.uow.transaction(async (tx) => {
    // Locked: two rotations at once (a retried request) would each mint a live key (QA).
    const old = await loadKey(tx, ctx, id, true);
    const now = deps.clock.now(); // after the lock: a change committed meanwhile is in the past
    if (isRevoked(old, now) || old.replacedBy)
      throw invalidState('revoked', 'a revoked or rotated key cannot be rotated');
    const lifetimeMs = old.expiresAt.getTime() - old.createdAt.getTime();
    const minted = buildKey({
      orgId: old.orgId,
      name: old.name,
      scopes: old.scopes,
      expiresAt: new Date(now.getTime() + lifetimeMs),
      createdBy: ctx.principal.id,
      now,
    });
    old.revokedAt = addSeconds(now, graceSeconds);
    old.replacedBy = minted.key.id;
    tx.keys.add(minted.key);
    tx.keys.update(old);
    // The new key has an entry of its own, found by its id and prefix (QA: only the old key's).
    recordKeyEvent(tx, ctx, 'key.created', minted.key, now, {
      expires_at: minted.key.expiresAt.toISOString(),
      rotated_from: old.id,
    });
    recordKeyEvent(tx, ctx, 'key.rotated', old, now, {
      new_key_id: minted.key.id,
      grace_seconds: graceSeconds,
    });
    return { minted, oldHash: old.secretHash, orgId: old.orgId };
  });
  await deps.authCache.forget(result.oldHash);
  // Without a grace the old key stops now, as a revocation does: so do the approvals it waits on.
  if (graceSeconds === 0)
    await deps.withdrawApprovals({ orgId: result.orgId, keyId: id }, actorOf(ctx.principal), ctx.requestId);
  return result.minted;
}

/** Revoking twice is fine: the second call changes nothing and records nothing. */
export async function revokeKey(deps: KeyDeps, ctx: CallContext, id: string): Promise<ApiKey> {
  const key = await deps.uow.transaction(async (tx) => {
    const found = await loadKey(tx, ctx, id, true);
    // Read after the lock: a revocation that committed while this one waited is in the past now,
    // so the second of two at once records nothing (QA: both wrote key.revoked).
    const now = deps.clock.now();
    if (isRevoked(found, now)) return found;
    found.revokedAt = now;
    tx.keys.update(found);
    recordKeyEvent(tx, ctx, 'key.revoked', found, now);
    return found;
  });
  await deps.authCache.forget(key.secretHash);
  await deps.withdrawApprovals({ orgId: key.orgId, keyId: key.id }, actorOf(ctx.principal), ctx.requestId);
  return key;
}
