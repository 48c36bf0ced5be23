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
    });
  });

  it.each([
    [{ PORT: 'eighty' }, /^PORT: /],
    [{ PORT: '70000' }, /^PORT: /],
    [{ DATABASE_URL: 'mysql://x' }, /^DATABASE_URL: must be a postgres: or postgresql:\/\/ URL/],
    [{ REDIS_URL: 'localhost:6379' }, /^REDIS_URL: /],
    [{ CP_MASTER_KEY: 'c2hvcnQ=' }, /^CP_MASTER_KEY: must be base64 of exactly 32 bytes/],
    [{ CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'yes' }, /^CP_ALLOW_PRIVATE_PROVIDER_HOSTS: /],
    [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL: /],
    [{ NODE_ENV: 'production' }, /^CP_MASTER_KEY: is required when NODE_ENV=production/],
  ])('names the bad variable %p', (env, message) => {
    expect(problemsOf(env as Record<string, string>)).toEqual([expect.stringMatching(message)]);
  });

  it('reports every bad variable at once', () => {
    expect(problemsOf({ PORT: 'x', LOG_LEVEL: 'y' })).toHaveLength(2);
  });
});
