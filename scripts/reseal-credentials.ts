/**
 * `npm run master-key:reseal`: after a master key rotation (new CP_MASTER_KEY, the old key in
 * CP_MASTER_KEY_PREVIOUS), reseals every stored credential under the new key. Safe to run while
 * the service runs and safe to run twice. Afterwards the old key can be dropped from
 * CP_MASTER_KEY_PREVIOUS (keep it 24 h longer for stored Idempotency-Key responses).
 * It also reseals rows sealed before provider and base_url were bound (start-up does as well),
 * and fails naming those that do not open.
 */
import { resealCredentials, resealLegacyCredentials } from '../domain/credentials/reseal';
import { ConfigError, loadConfig } from '../infra/config';
import { createInfra } from '../infra/container';
import { createLogger } from '../infra/logger';
import { resolveStores } from '../infra/stores';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  const stores = await resolveStores(config, logger);
  const infra = await createInfra(config, stores.urls, logger);
  try {
    const sealer = infra.credentialSealer;
    const deps = { uow: infra.uow, clock: infra.clock, sealer };
    logger.info({ key_id: sealer.currentKeyId }, 'resealing credentials under the current master key');
    const total = await resealCredentials(deps, (done) =>
      logger.info({ done }, `resealed ${done} credentials so far`),
    );
    logger.info({ resealed: total, key_id: sealer.currentKeyId }, `done: ${total} credentials resealed`);
    const { unreadable } = await resealLegacyCredentials(deps);
    if (unreadable.length > 0)
      throw new Error(
        `these credentials were sealed before provider and base_url were bound and do not open: ` +
          `${unreadable.join(', ')}. Is their master key in CP_MASTER_KEY_PREVIOUS? Otherwise rotate them.`,
      );
  } finally {
    await infra.close();
    await stores.stop();
  }
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError) console.error(err.message);
  else
    console.error(
      'reseal failed:',
      err instanceof Error ? err.message : err,
      '\nNo row was half-written; fix the cause (is the previous key in CP_MASTER_KEY_PREVIOUS?) and run it again.',
    );
  process.exit(1);
});
