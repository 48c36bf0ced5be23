import { createHash } from 'node:crypto';
import type { Context } from 'koa';
import { canonicalJson } from '../../domain/canonical-json';
import { DomainError, invalidField } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import type { Infra } from '../../infra/container';
import type { Reply } from './route';

const KEY_SHAPE = /^[\x21-\x7e]{1,255}$/;

const hashRequest = (body: unknown): string =>
  createHash('sha256')
    .update(canonicalJson(body ?? null))
    .digest('hex');

/**
 * `Idempotency-Key`: the same key with the same body within 24 h returns the first response
 * and creates nothing new; with another body, 409 `idempotency_conflict`. Only successful
 * responses are kept, so a failed request may be retried with the same key. Keys belong to the
 * caller (API key or dashboard user): another caller's same key is a request of its own, as with
 * Stripe, so a response holding a secret is never replayed to anyone but its requester.
 */
export async function withIdempotency(
  ctx: Context,
  infra: Infra,
  principal: Principal,
  route: string,
  rawBody: unknown,
  run: () => Promise<Reply>,
): Promise<Reply> {
  const key = ctx.get('Idempotency-Key');
  if (!key) return run();
  if (!KEY_SHAPE.test(key))
    throw invalidField('Idempotency-Key', 'Idempotency-Key must be 1..255 visible ASCII characters');
  const store = infra.idempotency;
  const scope = { orgId: principal.orgId, principalId: principal.id, key, route };
  const requestHash = hashRequest(rawBody);
  const claim = await store.claim(scope, requestHash);
  if (claim.kind === 'unreadable')
    throw new DomainError(
      'idempotency_conflict',
      'a request with this Idempotency-Key already ran, but its stored response can no longer be read (the master key that sealed it was dropped); send a new key only to run it again',
    );
  if (claim.kind === 'replay') {
    if (claim.requestHash !== requestHash) {
      throw new DomainError(
        'idempotency_conflict',
        'this Idempotency-Key was used with a different request body',
      );
    }
    if (!claim.response) {
      throw new DomainError(
        'idempotency_conflict',
        'a request with this Idempotency-Key is still in progress; retry shortly',
      );
    }
    return { ...claim.response, headers: { ...claim.response.headers, 'Idempotent-Replayed': 'true' } };
  }
  try {
    const reply = await run();
    if (reply.status < 300) await store.complete(scope, reply);
    else await store.release(scope);
    return reply;
  } catch (err) {
    await store.release(scope).catch(() => undefined);
    throw err;
  }
}
