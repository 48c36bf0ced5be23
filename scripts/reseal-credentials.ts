/**
 * `npm run master-key:reseal`: after a master key rotation (new CP_MASTER_KEY, the old key in
 * CP_MASTER_KEY_PREVIOUS), reseals every stored credential and webhook signing secret under the
 * new key. Safe to run while the service runs and safe to run twice. It then signs every audit checkpoint (and the signed
 * head kept in Redis) signed under a previous key again, under the new key, after checking the
 * old signature. Afterwards the old key can be dropped from CP_MASTER_KEY_PREVIOUS (keep it 24 h
 * longer for stored Idempotency-Key responses).
 * It also reseals rows sealed before provider and base_url were bound (start-up does as well),
 * and fails naming those that do not open, and the checkpoints whose signature does not verify.
 */
import { resignCheckpoints, type RefusedCheckpoint } from '../domain/audit/resign-checkpoints';
import { resealCredentials, resealLegacyCredentials } from '../domain/credentials/reseal';
import { resealWebhookSecrets } from '../domain/webhooks/reseal-webhook-secrets';
import { PgCheckpointStore } from '../infra/audit/pg-checkpoint-store';
import { RedisSignedHeads } from '../infra/audit/redis-signed-heads';
import { ConfigError, loadConfig } from '../infra/config';
import { createInfra, type Infra } from '../infra/container';
import { createLogger, type Logger } from '../infra/logger';
import { resolveStores } from '../infra/stores';
import { noArguments } from './cli-usage';

const USAGE = `
Usage: npm run master-key:reseal

After a master key rotation (the new key in CP_MASTER_KEY, the old one in CP_MASTER_KEY_PREVIOUS),
reseals every stored credential and webhook secret and re-signs the audit checkpoints under the
new key. Uses the same DATABASE_URL, REDIS_URL and CP_REDIS_PREFIX as the service; safe to run
while it runs, and twice. Exits 1 naming what could not be resealed or re-signed.
`;

async function main(): Promise<void> {
  noArguments(USAGE);
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
    const webhooks = await resealWebhookSecrets(
      { store: infra.webhookStore, sealer: infra.webhookSealer, clock: infra.clock },
      (done) => logger.info({ done }, `resealed ${done} webhook secrets so far`),
    );
    logger.info({ resealed: webhooks }, `done: ${webhooks} webhook secrets resealed`);
    const { unreadable } = await resealLegacyCredentials(deps);
    const problems: string[] = [];
    if (unreadable.length > 0)
      problems.push(
        `these credentials were sealed before provider and base_url were bound and do not open: ` +
          `${unreadable.join(', ')}. Is their master key in CP_MASTER_KEY_PREVIOUS? Otherwise rotate them.`,
      );
    const refused = await resignAuditCheckpoints(infra, logger);
    if (refused.length > 0) problems.push(refusedMessage(refused));
    if (problems.length > 0) throw new Error(problems.join('\n'));
  } finally {
    await infra.close();
    await stores.stop();
  }
}

/** Re-signs the audit checkpoints signed under a previous key; returns those it refused. */
async function resignAuditCheckpoints(infra: Infra, logger: Logger): Promise<RefusedCheckpoint[]> {
  const signedHeads = new RedisSignedHeads(infra.redis, infra.config.CP_REDIS_PREFIX);
  const store = new PgCheckpointStore(infra.knex, signedHeads);
  const current = infra.checkpointKey;
  logger.info({ key_id: current.id }, 're-signing audit checkpoints under the current master key');
  const report = await resignCheckpoints({ store, current, keys: infra.checkpointKeys }, (what, done) =>
    logger.info({ done }, `re-signed ${done} audit ${what} so far`),
  );
  logger.info(
    { resigned: report.resigned, heads_resigned: report.headsResigned, key_id: current.id },
    `done: ${report.resigned} audit checkpoints and ${report.headsResigned} signed heads re-signed`,
  );
  return report.refused;
}

const SHOWN = 20;

function refusedMessage(refused: RefusedCheckpoint[]): string {
  const named = refused
    .slice(0, SHOWN)
    .map((r) => `${r.place} org ${r.orgId} seq ${r.seq} (key ${r.keyId}: ${r.reason})`);
  const more = refused.length > SHOWN ? ` and ${refused.length - SHOWN} more` : '';
  return (
    `these audit checkpoints were not re-signed, their signature does not verify: ${named.join(', ')}${more}. ` +
    `Is their master key in CP_MASTER_KEY_PREVIOUS? Otherwise they were changed: GET /v1/audit/verify ` +
    `keeps failing on them, compare with the heads exported off the box.`
  );
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
