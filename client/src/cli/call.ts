import type { Command } from 'commander';
import { createControlPlane, type ControlPlane } from '../control-plane';
import { apiKeyProblem } from '../transport';
import { baseUrlOf } from './base-url';
import { EXIT, UsageError } from './exit-codes';
import type { CliIo } from './io';
import type { RunState } from './state';

/** The options every command takes (declared on the program). */
export interface GlobalOptions {
  baseUrl?: string;
  apiKey?: string;
  json?: boolean;
}

/**
 * Control characters but tab, line feed and a CR before one, shown as escapes: text from the
 * server (a key's name, a vote's comment, a model's answer) must not drive the reader's terminal
 * (colours, a title, the clipboard). JSON output has them escaped already, but for the C1 range,
 * whose escapes mean the same there.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]|\r(?!\n)/g;
export const printable = (text: string): string =>
  text.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** One command being run: its parsed options and arguments, the client, and where output goes. */
export class Call<O = Record<string, never>> {
  readonly options: O & GlobalOptions;
  readonly args: string[];

  constructor(
    readonly io: CliIo,
    command: Command,
  ) {
    this.options = command.optsWithGlobals<O & GlobalOptions>();
    this.args = command.processedArgs as string[];
  }

  get json(): boolean {
    return this.options.json === true;
  }

  /**
   * The API client; without a key, or with a base URL that is no server's, there is nothing the
   * CLI can ask, so those are usage errors.
   */
  client(): ControlPlane {
    const apiKey = this.options.apiKey ?? this.io.env.CP_API_KEY;
    if (!apiKey) throw new UsageError('no API key: set CP_API_KEY or pass --api-key');
    const problem = apiKeyProblem(apiKey);
    if (problem) throw new UsageError(`${problem}: check CP_API_KEY or --api-key`);
    return createControlPlane({
      baseUrl: baseUrlOf(this.options.baseUrl, this.io.env),
      apiKey,
      fetch: this.io.fetch,
      userAgent: 'control-plane-cli',
    });
  }

  out(text: string): void {
    this.io.stdout.write(printable(text.endsWith('\n') ? text : `${text}\n`));
  }

  err(text: string): void {
    this.io.stderr.write(printable(text.endsWith('\n') ? text : `${text}\n`));
  }

  /** The API's JSON as it answered (`--json`), or the readable rendering. */
  show(value: unknown, render: () => string): number {
    this.out(this.json ? JSON.stringify(value, null, 2) : render());
    return EXIT.ok;
  }
}

/** Wraps a command's handler for commander: builds its Call and keeps the exit code it returns. */
export function action<O>(state: RunState, handler: (call: Call<O>) => Promise<number>) {
  return async (...params: unknown[]) => {
    const command = params[params.length - 1] as Command;
    state.exitCode = await handler(new Call<O>(state.io, command));
  };
}
