import { z } from 'zod';
import { weakKeyMessage, weakKeyReason } from './crypto/key-strength';

const bool = z.enum(['true', 'false']).transform((v) => v === 'true');
/**
 * Numbers as people write them in decimal: `0x1FCD`, `1e6` or `8141.0` are refused rather than
 * read as something the writer may not have meant (Number() takes them all).
 */
const written = (pattern: RegExp, what: string) =>
  z.string().regex(pattern, `must be ${what}`).transform(Number);
// Digits alone are whole; the bounds keep them safe integers (no second line for a huge one).
const int = (min: number, max: number) =>
  written(/^\d+$/, 'a whole number in decimal digits').pipe(z.number().min(min).max(max));
const decimal = (max: number) =>
  written(/^\d+(\.\d+)?$/, 'a decimal number such as 1000 or 0.5').pipe(z.number().positive().max(max));
const urlWithScheme = (schemes: string[]) =>
  z
    .string()
    .refine(
      (v) => URL.canParse(v) && schemes.includes(new URL(v).protocol),
      `must be a ${schemes.join(' or ')}// URL`,
    );

/** A weak key seals every credential it is given; weak earlier keys still open, so resealing works. */
const refuseWeakKey = (v: string, ctx: z.RefinementCtx) => {
  const reason = weakKeyReason(Buffer.from(v, 'base64'));
  if (reason) ctx.addIssue({ code: 'custom', message: weakKeyMessage(reason) });
};

const schema = z
  .object({
    NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
    PORT: int(0, 65535).default(8080),
    HOST: z.string().min(1).default('127.0.0.1'),
    DATABASE_URL: urlWithScheme(['postgres:', 'postgresql:']).optional(),
    REDIS_URL: urlWithScheme(['redis:', 'rediss:']).optional(),
    CP_MASTER_KEY: z
      .string()
      .refine((v) => Buffer.from(v, 'base64').length === 32, 'must be base64 of exactly 32 bytes')
      .superRefine(refuseWeakKey)
      .optional(),
    // Keys replaced by a rotation: they still open what they sealed until `master-key:reseal` ran.
    CP_MASTER_KEY_PREVIOUS: z
      .string()
      .refine(
        (v) => v.split(',').every((k) => Buffer.from(k.trim(), 'base64').length === 32),
        'must be a comma-separated list of base64 keys of exactly 32 bytes',
      )
      .optional(),
    CP_ALLOW_PRIVATE_PROVIDER_HOSTS: bool.default(false),
    CP_ALLOW_PRIVATE_WEBHOOK_HOSTS: bool.default(false),
    // Behind a load balancer: take the client IP (per-IP rate limits) from X-Forwarded-For.
    CP_TRUST_PROXY: bool.default(false),
    // Open connections one client address may hold (not applied behind a proxy: CP_TRUST_PROXY).
    CP_MAX_CONNECTIONS_PER_CLIENT: int(1, 1_000_000).default(1024),
    // A request's headers, then the whole request, must arrive within these, else 408: a client
    // that stalls mid-request does not hold its connection for Node's five minutes.
    CP_HEADERS_TIMEOUT_MS: int(100, 600_000).default(10_000),
    CP_REQUEST_TIMEOUT_MS: int(100, 600_000).default(30_000),
    // Start although what the database holds was sealed under master keys not configured (lost).
    CP_MASTER_KEY_LOST: bool.default(false),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    CP_DATA_DIR: z.string().min(1).default('./.data'),
    CP_REDIS_PREFIX: z
      .string()
      .regex(/^[A-Za-z0-9_:-]{1,64}$/, 'letters, digits, _ - : only')
      .default('cp'),
    CP_RATE_LIMIT_PER_MINUTE: int(1, 1_000_000).default(600),
    // All of one org's keys and people together (unset: ten times CP_RATE_LIMIT_PER_MINUTE).
    CP_RATE_LIMIT_PER_ORG_PER_MINUTE: int(1, 100_000_000).optional(),
    CP_PUBLIC_RATE_LIMIT_PER_MINUTE: int(1, 1_000_000).default(30),
    // Unknown or revoked tokens a minute per client address before it gets 429 without a lookup.
    CP_AUTH_FAILURES_PER_MINUTE: int(1, 1_000_000).default(30),
    CP_MAX_BODY_BYTES: int(1024, 64 * 1024 * 1024).default(1024 * 1024),
    CP_MAX_WAIT_SECONDS: int(0, 300).default(30),
    CP_SESSION_TTL_SECONDS: int(60, 30 * 86_400).default(12 * 3600),
    CP_SHUTDOWN_TIMEOUT_MS: int(100, 600_000).default(10_000),
    // The invoke pipeline.
    CP_MAX_SESSION_COST_USD: decimal(1_000_000).default(1000),
    CP_MAX_MESSAGES: int(1, 10_000).default(256),
    CP_PROVIDER_TIMEOUT_MS: int(100, 600_000).default(60_000),
    CP_INVOKE_ATTEMPTS: int(1, 10).default(3),
    CP_INVOKE_BACKOFF_MS: int(10, 600_000).default(1000),
    CP_INVOKE_CONCURRENCY: int(1, 5000).default(256),
    // Sync invokes (a client waiting) run in the API process that took them, when it has room
    // (unset: yes in `main.ts`'s API processes; the test app's default is the queue).
    CP_SYNC_INVOKES_IN_API: bool.optional(),
    // How long such an invoke waits for room in its API process before it goes to the queue.
    CP_SYNC_INVOKE_ROOM_WAIT_MS: int(0, 60_000).default(250),
    // At most this many of one org's invocations run at once in one worker (unset: half its slots).
    CP_INVOKE_ORG_CONCURRENCY: int(1, 5000).optional(),
    CP_GUARDIAN_CONCURRENCY: int(1, 5000).default(64),
    // Milliseconds a second of one process's time that one org's policy evaluations may take.
    CP_ORG_EVALUATION_MS_PER_SECOND: int(1, 1000).default(250),
    // How long a worker holds a job without renewing its lock before another worker takes it over.
    CP_JOB_LOCK_MS: int(500, 600_000).default(30_000),
    // An invocation queued or running this long is checked against its job by the reaper.
    CP_REAP_AFTER_MS: int(1_000, 86_400_000).default(60_000),
    CP_DB_POOL_MAX: int(1, 200).default(10),
    // Webhook deliveries: first wait between attempts (doubling, at most 1 h), time per attempt, jobs at once.
    CP_WEBHOOK_BACKOFF_MS: int(10, 3_600_000).default(5000),
    CP_WEBHOOK_TIMEOUT_MS: int(100, 60_000).default(10_000),
    CP_WEBHOOK_CONCURRENCY: int(1, 1000).default(32),
    // At most this many of one org's webhook deliveries in flight at once, across all workers.
    CP_WEBHOOK_ORG_CONCURRENCY: int(1, 1000).default(8),
    CP_WEBHOOK_RECEIVER_CONCURRENCY: int(1, 1000).optional(),
    // Delivered and failed webhook deliveries are deleted this many days after they were created.
    CP_WEBHOOK_DELIVERY_RETENTION_DAYS: int(1, 3650).default(30),
    // GET /metrics: open when the API binds to loopback; otherwise only with this bearer token.
    CP_METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').max(512).optional(),
    // A worker process (--role worker) serves /metrics on this port when set (0 or unset: off).
    CP_WORKER_METRICS_PORT: int(0, 65_535).optional(),
    // The queue dashboard at /admin/queues is off unless this token is set; only it opens it.
    CP_QUEUE_DASHBOARD_TOKEN: z.string().min(16, 'must be at least 16 characters').max(512).optional(),
    OTEL_EXPORTER_OTLP_ENDPOINT: urlWithScheme(['http:', 'https:']).optional(),
    OTEL_SERVICE_NAME: z.string().min(1).max(100).default('control-plane'),
  })
  .refine((c) => c.NODE_ENV !== 'production' || c.CP_MASTER_KEY, {
    path: ['CP_MASTER_KEY'],
    message: 'is required when NODE_ENV=production (generate one with `npm run master-key:generate`)',
  });

export type Config = z.infer<typeof schema>;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Reads the environment once at boot; every bad variable is named with what it must be. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = schema.safeParse(present);
  if (parsed.success) return parsed.data;
  throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
}

/** Requests a minute of all of one org's keys and people: as configured, else ten keys' worth. */
export const orgRateLimitOf = (config: Config): number =>
  config.CP_RATE_LIMIT_PER_ORG_PER_MINUTE ?? config.CP_RATE_LIMIT_PER_MINUTE * 10;
