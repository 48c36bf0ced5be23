/** What every bench but the provider client's needs running, said in its usage. */
export const NEEDS_STORES =
  'Needs PostgreSQL on 127.0.0.1:5432 (user postgres, trust auth or the password postgres) and Redis on 127.0.0.1:6379, as the tests do\n' +
  '(BENCH_DATABASE_ADMIN_URL and BENCH_REDIS_URL point elsewhere).';

import { parseArgs } from 'node:util';
import { exitWithUsage, handleHelp } from '../scripts/cli-usage';

export { exitWithUsage, handleHelp, positiveInt } from '../scripts/cli-usage';

/**
 * The command line of a bench: `--help` prints its usage; `--name value` options (`valued`) and
 * flags (`flags`, no value); anything else, or an option without its value, prints the usage and
 * what was wrong (exit 2).
 */
export function benchOptions(
  usage: string,
  valued: readonly string[],
  flags: readonly string[] = [],
  argv = process.argv.slice(2),
) {
  handleHelp(usage, argv);
  const options = Object.fromEntries([
    ...valued.map((name) => [name, { type: 'string' as const }]),
    ...flags.map((name) => [name, { type: 'boolean' as const }]),
  ]);
  let values: Record<string, unknown> = {};
  try {
    ({ values } = parseArgs({ args: argv, options }));
  } catch (err) {
    exitWithUsage(usage, (err as Error).message);
  }
  return {
    text: (name: string): string | undefined => values[name] as string | undefined,
    flag: (name: string): boolean => values[name] === true,
  };
}
