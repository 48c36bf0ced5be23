/**
 * Long work waiting for its next turn, first come first served. One of them is let through per
 * turn of the event loop: with each piece of work on its own setImmediate, ten previews compiling
 * at once ran ten slices back to back in every turn, and a request between them waited for all
 * ten; now it waits for one.
 */
const waiting: Array<() => void> = [];
let pumping = false;

function letOneThrough(): void {
  waiting.shift()?.();
  if (waiting.length > 0) setImmediate(letOneThrough);
  else pumping = false;
}

/**
 * Resolves after the event loop's other ready work has had a turn, and after every long work that
 * asked for a turn before: what long work awaits between its pieces.
 */
export const nextTurn = (): Promise<void> =>
  new Promise<void>((resolve) => {
    waiting.push(resolve);
    if (pumping) return;
    pumping = true;
    setImmediate(letOneThrough);
  });

/**
 * How long work on the event loop runs before it lets other work have a turn; a piece that starts
 * within it runs through, so a slice of pattern compiles (up to about 2 ms each) takes 1–3 ms.
 * Against 2 ms, a request on the same loop waited a third less while sets compiled (p50 64–68
 * against 93–106 ms, `npm run bench:compile-turns`), and the sets took a little longer.
 */
export const SLICE_MS = 1;

/**
 * A `between` for long work done in pieces: it lets the event loop have a turn once `ms` have
 * passed since it last did, so that cheap pieces (a plain pattern compiles in microseconds) do not
 * each wait a turn, and costly ones never hold the loop much longer than `ms`.
 */
export function turnsEvery(ms = SLICE_MS): () => Promise<void> {
  let since = performance.now();
  return async () => {
    if (performance.now() - since < ms) return;
    await nextTurn();
    since = performance.now();
  };
}
