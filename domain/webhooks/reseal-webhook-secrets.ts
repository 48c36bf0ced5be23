import { SYSTEM_ACTOR } from '../audit/audit-event';
import { newAuditEvent } from '../audit/new-event';
import type { Clock } from '../clock';
import { drainInBatches } from '../drain-in-batches';
import type { SecretSealer } from '../ports';
import { webhookSealingContext } from './webhook';
import type { StoredWebhookSecret, WebhookSecretStore } from './webhook-store.port';

const BATCH = 100;

export interface WebhookResealDeps {
  store: WebhookSecretStore;
  sealer: SecretSealer;
  clock: Clock;
}

/** Opens the secret with whichever configured key sealed it and seals it under the current one. */
function resealOne(deps: WebhookResealDeps, { webhook, secret }: StoredWebhookSecret) {
  const context = webhookSealingContext(webhook);
  const resealed = deps.sealer.seal(deps.sealer.open(secret, context), context);
  const event = newAuditEvent({
    orgId: webhook.orgId,
    actor: SYSTEM_ACTOR,
    action: 'webhook.resealed',
    resource: { type: 'webhook', id: webhook.id },
    at: deps.clock.now(),
    requestId: null,
    details: { from_key_id: secret.keyId, to_key_id: resealed.keyId },
  });
  return { secret: resealed, event };
}

/**
 * Moves every live webhook's signing secret onto the current master key after a rotation, so
 * deliveries keep their signatures once the old key is dropped. Batches lock their rows (SKIP
 * LOCKED): safe while the service runs, and twice. A secret that does not open stops it, with
 * nothing of that batch written. Returns how many were resealed.
 */
export async function resealWebhookSecrets(
  deps: WebhookResealDeps,
  onProgress: (done: number) => void = () => {},
): Promise<number> {
  const batch = () =>
    deps.store.resealBatch(deps.sealer.currentKeyId, BATCH, (stored) => resealOne(deps, stored));
  return drainInBatches(BATCH, batch, onProgress);
}
