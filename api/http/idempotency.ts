import type { Context } from 'koa';
import { DomainError, invalidField } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import type { Infra } from '../../infra/container';
import type { Claim, RecordScope, RequestHashes } from '../../infra/http/idempotency-store';
import type { Reply } from './route';

const KEY_SHAPE = /^[\x21-\x7e]{1,255}$/;

/** A duplicate looks again after 100 ms, doubling to at most a second between looks. */
const pollMs = (looks: number) => Math.min(1_000, 100 * 2 ** looks);

/**
 * The claim once no other request holds the key: the same request sent again while the first
 * still runs (a client retrying on its own timeout) waits for the first's response and gets it
 * replayed, as it would have one moment later (it looks less often the longer it waits: a
 * thousand duplicates must not each ask the database ten times a second). A claim older than the
 * longest a request may take (the longest wait plus a margin) was left by a process that died:
 * the store lets it be taken over. Past that, the request gives up with 409.
 */
async function settledClaim(infra: Infra, scope: RecordScope, hashes: RequestHashes): Promise<Claim> {
  const staleAfterMs = (infra.config.CP_MAX_WAIT_SECONDS + 30) * 1000;
  const giveUpAt = Date.now() + staleAfterMs + 5_000;
  for (let looks = 0; ; looks++) {
    const claim = await infra.idempotency.claim(scope, hashes, staleAfterMs);
    const running = claim.kind === 'replay' && !claim.response && hashes.includes(claim.requestHash);
    if (!running || Date.now() >= giveUpAt) return claim;
    await new Promise((resolve) => setTimeout(resolve, pollMs(looks)));
  }
}

/**
 * `Idempotency-Key`: the same key with the same body within 24 h returns the first response
 * and creates nothing new; with another body, 409 `idempotency_conflict`. Only successful
 * responses are kept, so a failed request may be retried with the same key. Keys belong to the
 * caller (API key or dashboard user): another caller's same key is a request of its own, as with
 * Stripe, so a response holding a secret is never replayed to anyone but its requester. A route
 * whose answer waits after its resource is made (an invoke's `wait`) records an interim answer
 * first (`created`): if its process dies, a retry gets that, never a second resource.
 */
export async function withIdempotency(
  ctx: Context,
  infra: Infra,
  principal: Principal,
  route: string,
  rawBody: unknown,
  run: (created?: (reply: Reply) => Promise<void>) => Promise<Reply>,
): Promise<Reply> {
  const key = ctx.get('Idempotency-Key');
  if (!key) return run();
  if (!KEY_SHAPE.test(key))
    throw invalidField('Idempotency-Key', 'Idempotency-Key must be 1..255 visible ASCII characters');
  const store = infra.idempotency;
  const scope = { orgId: principal.orgId, principalId: principal.id, key, route };
  const hashes = store.hashesOf(rawBody);
  const claim = await settledClaim(infra, scope, hashes);
  if (claim.kind === 'unreadable')
    throw new DomainError(
      'idempotency_conflict',
      'a request with this Idempotency-Key already ran, but its stored response can no longer be read (the master key that sealed it was dropped); send a new key only to run it again',
    );
  if (claim.kind === 'replay') {
    if (!hashes.includes(claim.requestHash)) {
      throw new DomainError(
        'idempotency_conflict',
        'this Idempotency-Key was used with a different request body',
      );
    }
    if (!claim.response) {
      throw new DomainError(
        'idempotency_conflict',
        'a request with this Idempotency-Key is still in progress after the longest a request may take; retry shortly',
      );
    }
    return { ...claim.response, headers: { ...claim.response.headers, 'Idempotent-Replayed': 'true' } };
  }
  try {
    const reply = await run((interim) => store.created(scope, interim));
    if (reply.status < 300) await store.complete(scope, reply);
    else await store.release(scope);
    return reply;
  } catch (err) {
    await store.release(scope).catch(() => undefined);
    throw err;
  }
}
