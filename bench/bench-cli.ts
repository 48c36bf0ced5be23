/** What every bench but the provider client's needs running, said in its usage. */
export const NEEDS_STORES =
  'Needs PostgreSQL on 127.0.0.1:5432 (user postgres, trust auth or the password postgres) and Redis on 127.0.0.1:6379, as the tests do\n' +
  '(BENCH_DATABASE_ADMIN_URL and BENCH_REDIS_URL point elsewhere).';

export { exitWithUsage, handleHelp, positiveInt } from '../scripts/cli-usage';
