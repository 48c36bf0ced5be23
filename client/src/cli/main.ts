import { Command, CommanderError } from 'commander';
import { agentsCommand } from './commands/agents';
import { approvalsCommand } from './commands/approvals';
import { auditCommand } from './commands/audit';
import { credentialsCommand } from './commands/credentials';
import { invokeCommand } from './commands/invoke';
import { keysCommand } from './commands/keys';
import { sessionsCommand } from './commands/sessions';
import { statsCommand } from './commands/stats';
import { printable } from './call';
import { describeError, EXIT, EXIT_CODES_HELP, exitCodeOf } from './exit-codes';
import type { CliIo } from './io';
import type { RunState } from './state';

export type { CliIo } from './io';

const ENVIRONMENT_HELP = `
Environment:
  CP_API_KEY    the API key (csk_...) or session token; --api-key overrides it
  CP_BASE_URL   the server's http(s) URL (default http://127.0.0.1:8080; a trailing /v1 is
                dropped); --base-url overrides it
`;

/**
 * Runs the CLI on `argv` (the arguments after the program's name) and returns its exit code; it
 * never exits the process, so tests and other programs can call it in-process.
 */
export async function run(argv: string[], io: CliIo): Promise<number> {
  const state: RunState = { io, exitCode: EXIT.ok };
  try {
    await program(state).parseAsync(argv, { from: 'user' });
    return state.exitCode;
  } catch (error) {
    // Commander has already written its message (or the help) through configureOutput.
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    io.stderr.write(printable(describeError(error)));
    return exitCodeOf(error);
  }
}

function program(state: RunState): Command {
  const root = new Command('control-plane')
    .description('Operate the control plane from a terminal or a script.')
    .option(
      '--base-url <url>',
      'the server’s http(s) URL, a trailing /v1 dropped (default: CP_BASE_URL, else http://127.0.0.1:8080)',
    )
    .option('--api-key <key>', 'the API key (default: CP_API_KEY)')
    .option('--json', 'print the API’s JSON as it answered, for scripts')
    .addHelpText('after', ENVIRONMENT_HELP + EXIT_CODES_HELP);
  for (const command of [
    keysCommand(state),
    credentialsCommand(state),
    agentsCommand(state),
    sessionsCommand(state),
    invokeCommand(state),
    approvalsCommand(state),
    auditCommand(state),
    statsCommand(state),
  ])
    root.addCommand(command);
  everyCommand(root, (command) =>
    command
      .exitOverride()
      .showHelpAfterError('(add --help for usage)')
      .configureOutput({
        writeOut: (text) => state.io.stdout.write(text),
        writeErr: (text) => state.io.stderr.write(text),
      }),
  );
  return root;
}

/** addCommand() does not pass settings down the tree, so each command gets them itself. */
function everyCommand(command: Command, configure: (command: Command) => void): void {
  configure(command);
  for (const sub of command.commands) everyCommand(sub, configure);
}
