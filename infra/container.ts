import type { Knex } from '@mikro-orm/knex';
import type { MikroORM } from '@mikro-orm/postgresql';
import type Redis from 'ioredis';
import { getHeapStatistics } from 'node:v8';
import { checkpointKeyFrom, type CheckpointKey } from '../domain/audit/checkpoint';
import { systemClock, type Clock } from '../domain/clock';
import type { SecretSealer, UnitOfWork } from '../domain/ports';
import { PgAuditLog } from './audit/pg-audit-log';
import { RedisSignedHeads } from './audit/redis-signed-heads';
import { KeyUsageTracker } from './auth/key-usage';
import { TokenAuthenticator } from './auth/token-authenticator';
import { orgRateLimitOf, type Config } from './config';
import { migrate, openOrm } from './db/orm';
import { MikroUnitOfWork } from './db/unit-of-work';
import { resolveKeyring } from './master-key';
import { KeyringBox, type Keyring } from './crypto/keyring';
import { checkMasterKeys } from './crypto/master-key-check';
import { resealLegacyAtStart } from './crypto/reseal-at-start';
import { IdempotencyStore } from './http/idempotency-store';
import { RateLimit, type RateLimits } from './http/rate-limiters';
import type { OrgDeliverySlots } from '../domain/webhooks/org-delivery-slots';
import type { Logger } from './logger';
import { ProviderRouter } from './providers/provider-router';
import { JobQueues } from './queue/job-queues';
import { openRedis } from './redis/connections';
import { RedisCapLedger } from './budget/redis-cap-ledger';
import { CompletionHub } from './invocations/completion-hub';
import { counting } from './metrics/counting-signal';
import { Metrics } from './metrics/metrics';
import { storeSources } from './metrics/scrape-sources';
import { PgApprovalStore } from './approvals/pg-approval-store';
import type { CompletionSignal } from '../domain/invocations/signals';
import { HttpWebhookSender } from './webhooks/http-webhook-sender';
import { RedisOrgDeliverySlots, SLOT_MARGIN_MS, WAITER_LAPSE_MS } from './webhooks/redis-org-delivery-slots';
import { PgWebhookStore } from './webhooks/pg-webhook-store';
import { PgWebhookFeed } from './webhooks/pg-webhook-feed';
import { PgInvocationStore } from './invocations/pg-invocation-store';
import { PgDecisionLog } from './decisions/pg-decision-log';
import { PgActionHistory } from './policy/pg-action-history';
import { PgPolicySetReader } from './policy/pg-policy-set-reader';
import { PolicyThread } from './policy/policy-thread';
import { RedisEvaluationRelay } from './policy/redis-evaluation-relay';
import { PgSessionStore } from './sessions/pg-session-store';
import { PgUsageStats } from './stats/pg-usage-stats';
import { installTelemetry } from './telemetry';
import { PreparedPool } from './db/prepared-pool';
import { turnsEvery } from '../domain/next-turn';
import {
  compiledWeight,
  compilePoliciesInTurns,
  type CompiledPolicySet,
} from '../domain/policy/compile-policies';
import type { PolicySet } from '../domain/policy/policy';
import { compiledSetsBudget } from '../domain/policy/limits';
import { CompiledPolicies } from '../domain/policy/compiled-policies';
import { Guardian } from '../domain/policy/guardian';
import { EvaluationRunner } from '../domain/policy/evaluation-runner';
import { EvaluationTime } from '../domain/policy/evaluation-time';
import { OrgPolicyEngine } from '../domain/policy/org-policy-engine';
import { OrgShares } from '../domain/invocations/org-shares';
import { QUEUED_ONLY, type SyncRunner } from '../domain/invocations/signals';
import { RunClaims } from './queue/run-claims';

/** Where the stores are, once embedded defaults have been resolved. */
export interface StoreUrls {
  databaseUrl: string;
  redisUrl: string;
}

/** Everything the API and the workers use from the outside world, built once per process. */
export interface Infra {
  config: Config;
  urls: StoreUrls;
  logger: Logger;
  clock: Clock;
  orm: MikroORM;
  knex: Knex;
  redis: Redis;
  uow: UnitOfWork;
  authenticator: TokenAuthenticator;
  keyUsage: KeyUsageTracker;
  auditLog: PgAuditLog;
  /** Signs audit checkpoints; derived from CP_MASTER_KEY. */
  checkpointKey: CheckpointKey;
  /** Every checkpoint key we can verify with: the current one first, then previous master keys'. */
  checkpointKeys: CheckpointKey[];
  /** CP_MASTER_KEY and the previous keys: seals provider credentials and stored responses. */
  keyring: Keyring;
  /** Seals and opens provider secrets (purpose-bound key derived from the keyring). */
  credentialSealer: SecretSealer;
  queues: JobQueues;
  /** The provider adapters (openai, openai_compatible, anthropic, mock) behind one port. */
  providers: ProviderRouter;
  idempotency: IdempotencyStore;
  /** The invoke pipeline: invocations and sessions in PostgreSQL, caps in Redis, completion signals. */
  invocations: PgInvocationStore;
  sessions: PgSessionStore;
  ledger: RedisCapLedger;
  completions: CompletionHub;
  /** Tells waiting clients that an invocation finished (webhooks hear of it from the audit log). */
  signal: CompletionSignal;
  /** Human approvals of paused invocations, resolved under row locks. */
  approvals: PgApprovalStore;
  /** Each webhook's place in its org's sealed audit log, from which its events are made. */
  webhookFeed: PgWebhookFeed;
  /** Webhooks and their deliveries; their signing secrets, sealed; the client that POSTs to receivers. */
  webhookStore: PgWebhookStore;
  webhookSealer: SecretSealer;
  webhookSender: HttpWebhookSender;
  /** One org's share of this worker's invoke slots (CP_INVOKE_ORG_CONCURRENCY). */
  invokeShares: OrgShares;
  /** The invocations API processes run themselves, leased so the reaper leaves them alone. */
  runClaims: RunClaims;
  /**
   * Runs a sync invoke in this process instead of the queue: the API's, when
   * CP_SYNC_INVOKES_IN_API is on (set by workers/sync-runs.ts: startSyncRuns), else one that never does.
   */
  syncRuns: SyncRunner;
  /** The per-org cap on webhook deliveries in flight (CP_WEBHOOK_ORG_CONCURRENCY). */
  webhookSlots: OrgDeliverySlots;
  /** Each org's share of this process's policy evaluation time (CP_ORG_EVALUATION_MS_PER_SECOND). */
  evaluationTime: EvaluationTime;
  /**
   * Each org's share of this process's time compiling the patterns of policy bodies (writes and
   * previews): the evaluations' rate, a balance of its own, so that an org whose invokes spent
   * their share can still change the policies that cost it.
   */
  patternCheckTime: EvaluationTime;
  /** Runs the engine within those shares, the evaluations that may be heavy in a thread of their own. */
  evaluationRunner: EvaluationRunner;
  guardian: Guardian;
  /** Each org's policy_version and policy set, read in one snapshot (for the compiled-policy cache). */
  policySets: PgPolicySetReader;
  /** The org's recorded invocations, oldest first (the policy impact preview replays them). */
  actionHistory: PgActionHistory;
  /** Each org's compiled policies by policy_version, shared by the guardian stage and evaluations. */
  compiledPolicies: CompiledPolicies<CompiledPolicySet>;
  /** Hands `POST /v1/acs/evaluate` requests to the guardian workers and their answers back. */
  evaluations: RedisEvaluationRelay;
  /** Every guardian decision, newest first (GET /v1/acs/decisions). */
  decisionLog: PgDecisionLog;
  usageStats: PgUsageStats;
  /** This process's Prometheus metrics (GET /metrics; a worker's own port). */
  metrics: Metrics;
  rateLimits: RateLimits;
  checks: { database(): Promise<void>; redis(): Promise<void> };
  close(): Promise<void>;
}

/** One org's share of a worker's invoke slots: as configured, else half of them. */
export const orgShareOf = (config: Config): number =>
  config.CP_INVOKE_ORG_CONCURRENCY ?? Math.max(1, Math.floor(config.CP_INVOKE_CONCURRENCY / 2));

/**
 * One webhook's share of its org's delivery slots: as configured, else half of them, so a
 * receiver that never answers leaves the org's others half its slots (at most the org's cap).
 */
export const receiverShareOf = (config: Config): number =>
  Math.min(
    config.CP_WEBHOOK_ORG_CONCURRENCY,
    config.CP_WEBHOOK_RECEIVER_CONCURRENCY ?? Math.max(1, Math.floor(config.CP_WEBHOOK_ORG_CONCURRENCY / 2)),
  );

const withTimeout = <T>(promise: Promise<T>, ms: number, what: string): Promise<T> =>
  Promise.race([
    promise,
    new Promise<T>((_, reject) =>
      setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms).unref(),
    ),
  ]);

export async function createInfra(config: Config, urls: StoreUrls, logger: Logger): Promise<Infra> {
  installTelemetry({
    serviceName: config.OTEL_SERVICE_NAME,
    otlpEndpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT,
  });
  const orm = await openOrm(urls.databaseUrl, logger, config.CP_DB_POOL_MAX);
  await migrate(orm, urls.databaseUrl, logger);
  const knex = orm.em.getConnection().getKnex();
  const keyring = resolveKeyring(config.CP_MASTER_KEY, config.CP_MASTER_KEY_PREVIOUS, config.CP_DATA_DIR);
  const checkpointKeys = keyring.all.map((k) => checkpointKeyFrom(k.key));
  const checkpointKey = checkpointKeys[0] as CheckpointKey;
  // Before anything could seal or sign under a wrong key; nothing but the database is open yet.
  const knownKeyIds = new Set([...keyring.all, ...checkpointKeys].map((k) => k.id));
  await checkMasterKeys(knex, knownKeyIds, logger, config.CP_MASTER_KEY_LOST).catch(async (err: unknown) => {
    await orm.close();
    throw err;
  });
  const redis = await openRedis(urls.redisUrl);
  const prefix = config.CP_REDIS_PREFIX;
  const authenticator = new TokenAuthenticator(knex, redis, prefix, config.CP_AUTH_FAILURES_PER_MINUTE);
  const queues = new JobQueues(urls.redisUrl, `${prefix}:bull`, {
    'invocation.run': { attempts: config.CP_INVOKE_ATTEMPTS, backoffMs: config.CP_INVOKE_BACKOFF_MS },
    'webhook.deliver': { backoffMs: config.CP_WEBHOOK_BACKOFF_MS },
  });
  const completions = new CompletionHub(redis, urls.redisUrl, prefix, logger);
  const prepared = new PreparedPool(urls.databaseUrl, config.CP_DB_POOL_MAX);
  const ledger = new RedisCapLedger(redis, prefix);
  const metrics = new Metrics(storeSources({ queues, ledger, knex }));
  const providers = new ProviderRouter({
    allowPrivateHosts: config.CP_ALLOW_PRIVATE_PROVIDER_HOSTS,
    metrics,
  });
  const uow = new MikroUnitOfWork(orm);
  const credentialSealer = new KeyringBox(keyring, 'credentials');
  await resealLegacyAtStart({ uow, clock: systemClock, sealer: credentialSealer }, logger);
  const policySets = new PgPolicySetReader(knex);
  const webhookStore = new PgWebhookStore(knex);
  const webhookSender = new HttpWebhookSender(config.CP_ALLOW_PRIVATE_WEBHOOK_HOSTS);
  // A new version is compiled in slices of the event loop: at the org's pattern limit, about a tenth
  // of a second in one piece, and an org can make a version a request.
  const compileInTurns = (set: PolicySet) => compilePoliciesInTurns(set, turnsEvery());
  const compiledPolicies = new CompiledPolicies(policySets, compileInTurns, systemClock, {
    weigh: compiledWeight,
    budget: compiledSetsBudget(getHeapStatistics().heap_size_limit),
  });
  const evaluationTime = new EvaluationTime(config.CP_ORG_EVALUATION_MS_PER_SECOND);
  const policyThread = new PolicyThread((message, fields) => logger.warn(fields, message));
  const evaluationRunner = new EvaluationRunner(evaluationTime, policyThread);
  return {
    config,
    urls,
    logger,
    clock: systemClock,
    orm,
    knex,
    redis,
    uow,
    authenticator,
    keyUsage: new KeyUsageTracker(knex, redis, prefix),
    auditLog: new PgAuditLog(knex, checkpointKey, new RedisSignedHeads(redis, prefix), logger),
    checkpointKey,
    checkpointKeys,
    keyring,
    credentialSealer,
    queues,
    providers,
    idempotency: new IdempotencyStore(knex, keyring),
    invocations: new PgInvocationStore(prepared, knex),
    sessions: new PgSessionStore(knex),
    ledger,
    completions,
    signal: counting(metrics, completions),
    approvals: new PgApprovalStore(knex),
    webhookStore,
    webhookFeed: new PgWebhookFeed(knex),
    webhookSealer: new KeyringBox(keyring, 'webhooks'),
    webhookSender,
    invokeShares: new OrgShares(orgShareOf(config)),
    runClaims: new RunClaims(redis, prefix, {
      reapAfterMs: config.CP_REAP_AFTER_MS,
      jobLockMs: config.CP_JOB_LOCK_MS,
    }),
    syncRuns: QUEUED_ONLY,
    webhookSlots: new RedisOrgDeliverySlots(
      redis,
      prefix,
      config.CP_WEBHOOK_ORG_CONCURRENCY,
      config.CP_WEBHOOK_TIMEOUT_MS + SLOT_MARGIN_MS,
      WAITER_LAPSE_MS,
      receiverShareOf(config),
    ),
    guardian: new Guardian(new OrgPolicyEngine(compiledPolicies, evaluationRunner)),
    evaluationTime,
    patternCheckTime: new EvaluationTime(config.CP_ORG_EVALUATION_MS_PER_SECOND),
    evaluationRunner,
    policySets,
    actionHistory: new PgActionHistory(knex),
    compiledPolicies,
    evaluations: new RedisEvaluationRelay(redis, prefix),
    decisionLog: new PgDecisionLog(knex),
    usageStats: new PgUsageStats(knex),
    metrics,
    rateLimits: {
      perKey: new RateLimit(redis, `${prefix}:rl:key`, config.CP_RATE_LIMIT_PER_MINUTE),
      perOrg: new RateLimit(redis, `${prefix}:rl:org`, orgRateLimitOf(config), "the org's rate limit"),
      perIp: new RateLimit(redis, `${prefix}:rl:ip`, config.CP_PUBLIC_RATE_LIMIT_PER_MINUTE),
    },
    checks: {
      database: async () => void (await withTimeout(knex.raw('select 1'), 2_000, 'PostgreSQL')),
      // The API's own connection and the job producers' (which reconnect on their own after an outage).
      redis: async () => void (await withTimeout(Promise.all([redis.ping(), queues.ping()]), 2_000, 'Redis')),
    },
    // Each connection closes even if another fails (Redis may already be gone).
    close: async () => {
      await Promise.allSettled([
        queues.close(),
        providers.close(),
        completions.close(),
        webhookSender.close(),
        policyThread.close(),
      ]);
      redis.disconnect();
      await prepared.close().catch(() => undefined);
      await orm.close(true);
    },
  };
}
