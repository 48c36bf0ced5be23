import type { CliIo } from './io';

/** What one run of the CLI shares between its commands: where to write, and the exit code so far. */
export interface RunState {
  io: CliIo;
  exitCode: number;
}
