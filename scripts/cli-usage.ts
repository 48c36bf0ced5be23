/**
 * The command line of every script and bench: `--help` prints its usage, and a bad argument says
 * what is wrong and how to call it (exit 2) instead of a stack trace.
 */
export function exitWithUsage(usage: string, problem?: string): never {
  if (problem) console.error(`${problem}\n`);
  (problem ? console.error : console.log)(usage.trim());
  process.exit(problem ? 2 : 0);
}

/** Prints the usage and exits when `--help` or `-h` was given. */
export function handleHelp(usage: string, argv = process.argv.slice(2)): void {
  if (argv.includes('--help') || argv.includes('-h')) exitWithUsage(usage);
}

/** A whole number of at least `min`, or the usage with what was wrong. */
export function positiveInt(
  usage: string,
  name: string,
  text: string | undefined,
  fallback: number,
  min = 1,
): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min)
    exitWithUsage(usage, `${name} must be a whole number of at least ${min}, not "${text}"`);
  return value;
}

/** For a script that takes no arguments: `--help` prints the usage; anything else is refused. */
export function noArguments(usage: string, argv = process.argv.slice(2)): void {
  handleHelp(usage, argv);
  if (argv.length > 0) exitWithUsage(usage, `unexpected argument: ${argv[0]}`);
}
