import { canSpinOn } from './io';
import { run } from './main';

// The process's own streams; the exit code is set, not forced, so pending output is flushed.
void run(process.argv.slice(2), {
  env: process.env,
  stdout: process.stdout,
  stderr: process.stderr,
  isTTY: canSpinOn(process.stderr),
}).then((code) => {
  process.exitCode = code;
});
