import { randomBytes } from 'node:crypto';
import { ConfigError, loadConfig } from '../../infra/config';

const problemsOf = (env: Record<string, string>): string[] => {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
};

describe('configuration from the environment', () => {
  it('reads decimal numbers as written', () => {
    expect(loadConfig({ PORT: '8141', CP_MAX_SESSION_COST_USD: '0.5' })).toMatchObject({
      PORT: 8141,
      CP_MAX_SESSION_COST_USD: 0.5,
    });
  });

  it('has the documented defaults', () => {
    expect(loadConfig({})).toMatchObject({
      PORT: 8080,
      HOST: '127.0.0.1',
      CP_ALLOW_PRIVATE_PROVIDER_HOSTS: false,
      LOG_LEVEL: 'info',
      CP_RATE_LIMIT_PER_MINUTE: 600,
      CP_PUBLIC_RATE_LIMIT_PER_MINUTE: 30,
      CP_MAX_BODY_BYTES: 1048576,
      CP_MAX_WAIT_SECONDS: 30,
      CP_WEBHOOK_DELIVERY_RETENTION_DAYS: 30,
    });
  });

  it.each([
    [{ PORT: 'eighty' }, /^PORT: /],
    [{ PORT: '70000' }, /^PORT: /],
    // Decimal digits only: Number() would read these as something else (QA).
    [{ PORT: '0x1FCD' }, /^PORT: must be a whole number in decimal digits/],
    [{ PORT: '99999999999999999999999' }, /^PORT: Too big: expected number to be <=65535/], // one line
    [{ PORT: '8141.0' }, /^PORT: must be a whole number in decimal digits/],
    [{ CP_MAX_BODY_BYTES: '1e6' }, /^CP_MAX_BODY_BYTES: must be a whole number in decimal digits/],
    [{ CP_MAX_SESSION_COST_USD: '1e3' }, /^CP_MAX_SESSION_COST_USD: must be a decimal number/],
    [{ DATABASE_URL: 'mysql://x' }, /^DATABASE_URL: must be a postgres: or postgresql:\/\/ URL/],
    [{ REDIS_URL: 'localhost:6379' }, /^REDIS_URL: /],
    [{ CP_MASTER_KEY: 'c2hvcnQ=' }, /^CP_MASTER_KEY: must be base64 of exactly 32 bytes/],
    [{ CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'yes' }, /^CP_ALLOW_PRIVATE_PROVIDER_HOSTS: /],
    [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL: /],
    [{ CP_WEBHOOK_DELIVERY_RETENTION_DAYS: '0' }, /^CP_WEBHOOK_DELIVERY_RETENTION_DAYS: /],
    [{ NODE_ENV: 'production' }, /^CP_MASTER_KEY: is required when NODE_ENV=production/],
  ])('names the bad variable %p', (env, message) => {
    expect(problemsOf(env as Record<string, string>)).toEqual([expect.stringMatching(message)]);
  });

  it.each([
    ['all zero', Buffer.alloc(32)],
    ['a repeated pattern', Buffer.concat(Array(4).fill(randomBytes(8)))],
    ['a passphrase', Buffer.from('correct horse battery staple 123')],
  ])('refuses a CP_MASTER_KEY that is %s, and says how to make a good one', (_label, weak) => {
    expect(weak).toHaveLength(32);
    expect(problemsOf({ CP_MASTER_KEY: weak.toString('base64') })).toEqual([
      expect.stringMatching(/^CP_MASTER_KEY: is too weak .*generate one with `npm run master-key:generate`/),
    ]);
  });

  it('accepts a random CP_MASTER_KEY, and a weak CP_MASTER_KEY_PREVIOUS it is rotating away from', () => {
    const env = {
      CP_MASTER_KEY: randomBytes(32).toString('base64'),
      CP_MASTER_KEY_PREVIOUS: `${randomBytes(32).toString('base64')},${Buffer.alloc(32).toString('base64')}`,
    };
    expect(problemsOf(env)).toEqual([]);
  });

  it('reports every bad variable at once', () => {
    expect(problemsOf({ PORT: 'x', LOG_LEVEL: 'y' })).toHaveLength(2);
  });
});
