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
 * How long work on the event loop (compiling patterns: up to about 2 ms each) runs before it lets
 * other work have a turn.
 */
export const SLICE_MS = 2;

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
