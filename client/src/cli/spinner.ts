import { createSpinner } from 'nanospinner';
import type { CliIo } from './io';

export interface Progress {
  update(text: string): void;
  /** A line that stays on stderr, with or without a terminal. */
  note(line: string): void;
  /** Removes the spinner, leaving no line behind (the answer follows on stdout). */
  stop(): void;
}

/** Without a terminal only the notes are written. */
const silent = (io: CliIo): Progress => ({
  update() {},
  note: (line) => io.stderr.write(`${line}\n`),
  stop() {},
});

/**
 * A spinner on stderr while a request is waited on, only when stderr is a terminal: in a pipe or a
 * CI log its frames would be noise, and stdout stays for the answer either way.
 */
export function progress(io: CliIo, text: string): Progress {
  if (!io.isTTY) return silent(io);
  const spinner = createSpinner(text, { stream: io.stderr as NodeJS.WriteStream }).start();
  const whileSpinning = (draw: () => void) => {
    if (spinner.isSpinning()) draw();
  };
  return {
    update: (next) => whileSpinning(() => spinner.update({ text: next })),
    note: (line) => {
      if (spinner.isSpinning()) spinner.clear();
      io.stderr.write(`${line}\n`);
    },
    stop: () => whileSpinning(() => spinner.stop()),
  };
}
